#!/usr/bin/env python3
"""Reads a Prometheus text exposition on stdin with the official client's parser (Debian's
python3-prometheus-client, so run it with /usr/bin/python3) and prints its samples as JSON lines:
{"name", "labels", "value", "type"}. A malformed exposition makes the parser raise, and this
script exit 1 with its error."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

try:
    families = list(text_string_to_metric_families(sys.stdin.read()))
except Exception as error:  # the parser raises ValueError and others on malformed text
    print(f"malformed exposition: {error}", file=sys.stderr)
    sys.exit(1)
for family in families:
    for sample in family.samples:
        print(json.dumps({"name": sample.name, "labels": sample.labels, "value": sample.value,
                          "type": family.type}))
