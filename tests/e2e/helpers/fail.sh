#!/bin/sh
# Fails for a reason that is not GPU memory.
echo "ValueError: expected 3 channels, got 4" >&2
exit 3
