#!/usr/bin/env python3
"""What TensorBoard reads of a run's event files, for cli_test:

    python3 tests/tensorboard_check.py RUN_DIR

Loads RUN_DIR as `tensorboard --logdir` would load a run (TensorBoard's own event
accumulator, which checks each record's CRCs) and prints one JSON object: every scalar
tag with its [step, value] pairs in the order read.
"""
import json
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def main():
    accumulator = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
    accumulator.Reload()
    scalars = {}
    for tag in accumulator.Tags()["scalars"]:
        scalars[tag] = [[event.step, event.value] for event in accumulator.Scalars(tag)]
    print(json.dumps(scalars))


if __name__ == "__main__":
    main()
