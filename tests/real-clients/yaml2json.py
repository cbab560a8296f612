"""Prints a YAML file's (single) document as JSON: the suite compares stored objects with its manifests."""
import json
import sys

import yaml

with open(sys.argv[1]) as f:
    json.dump(yaml.safe_load(f), sys.stdout)
