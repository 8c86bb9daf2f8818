"""The one exception the user sees without a traceback."""


class TrustcalError(Exception):
    """An error whose message is meant for the user: it names the file and the fix."""
