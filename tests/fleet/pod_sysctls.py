#!/usr/bin/env python3
"""Print the sysctls of a Pod manifest (spec.securityContext.sysctls) as JSON: [[name, value], ...].

usage: pod_sysctls.py FILE   (PyYAML, from the test venv that also holds kubernetes-validate)
"""
import json
import sys

import yaml

with open(sys.argv[1]) as f:
    docs = [d for d in yaml.safe_load_all(f) if d]
pods = [d for d in docs if d.get("kind") == "Pod"]
if len(pods) != 1:
    sys.exit(f"expected one Pod, found {len(pods)}")
sysctls = pods[0].get("spec", {}).get("securityContext", {}).get("sysctls", [])
json.dump([[s["name"], s["value"]] for s in sysctls], sys.stdout)
