"""The `furiosa-opt` command."""
