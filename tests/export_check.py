#!/usr/bin/env python3
"""What PyTorch makes of a model `actorpipe export` wrote, for imported_models_test:

    python3 tests/export_check.py EXPORTED.pt STATE_DICT.pt ORIGINAL.pt TOKENS CONTEXT

TOKENS is a uint16 token file cut as actorpipe cuts it (non-overlapping windows of
CONTEXT + 1, the last tenth the test split). Prints one JSON object: the exported
module's mean cross-entropy and accuracy on the test split, whether the state_dict's
names are the original module's, and how far the original module, given the
state_dict, is from the exported one on the test inputs.
"""
import json
import sys

import numpy
import torch


def main():
    exported_path, state_path, original_path, tokens_path, context = sys.argv[1:6]
    context = int(context)
    ids = torch.from_numpy(numpy.fromfile(tokens_path, dtype="<u2").astype(numpy.int64))
    windows = (ids.numel() - 1) // context
    test = max(1, windows // 10)
    first = windows - test
    inputs = torch.stack([ids[w * context : w * context + context] for w in range(first, windows)])
    labels = torch.stack([ids[w * context + 1 : w * context + context + 1] for w in range(first, windows)])

    exported = torch.jit.load(exported_path).eval()
    original = torch.jit.load(original_path).eval()
    state = torch.load(state_path)
    names = list(dict(original.named_parameters()).keys()) + list(dict(original.named_buffers()).keys())
    with torch.no_grad():
        logits = exported(inputs)
        flat = logits.reshape(-1, logits.size(-1))
        loss = torch.nn.functional.cross_entropy(flat, labels.reshape(-1)).item()
        accuracy = (flat.argmax(1) == labels.reshape(-1)).double().mean().item()
        tensors = dict(original.named_parameters())
        tensors.update(dict(original.named_buffers()))
        for name, tensor in state.items():
            tensors[name].copy_(tensor)
        apart = (original(inputs) - logits).abs().max().item()
    print(json.dumps({"test_loss": loss, "test_accuracy": accuracy, "names_match": list(state.keys()) == names,
                      "state_dict_apart": apart}))


if __name__ == "__main__":
    main()
