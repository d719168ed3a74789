"""Agent methods that generate rollouts by talking to a model backend and a live environment."""
