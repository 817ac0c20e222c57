"""The async cell loop and the evaluation loop: order of operations only."""
