#!/bin/bash
# waiting behaviours beside N spinners; 2 threads, the engine, both models
cd "$(dirname "$0")/../../.."
run() { # label busy env...
  label=$1; busy=$2; shift 2
  env "$@" .venv/bin/python benchmarks/bench_training.py --variants engine --threads 2 --busy $busy --out benchmarks/records/busy-waiting/$label.csv 2>&1 | grep -E "engine " | sed "s/^/$label busy=$busy /"
}
run quiet0 0
for b in 1 2; do
  run passive$b $b OMP_WAIT_POLICY=PASSIVE
  run spin1k$b $b GOMP_SPINCOUNT=1000
  run spin10k$b $b GOMP_SPINCOUNT=10000
  run spin100k$b $b GOMP_SPINCOUNT=100000
done
run quiet1 0
