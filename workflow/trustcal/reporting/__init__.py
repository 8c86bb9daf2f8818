"""From tables to what people read: result tables, figures, the verdict on the paper's claims."""
