#!/usr/bin/env python3
"""Print every suite's tables found under a bench output folder as one Markdown document.

Usage: tools/bench_summary.py BENCH_OUT > SUMMARY.md
Each section names the command, seed and wall time that produced it (from the suite's JSON).
"""
import glob
import json
import os
import sys


def main(argv):
    """Print the summary of ``argv[1]``; exit 2 without a folder."""
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        sys.stderr.write(__doc__)
        return 2
    root = argv[1]
    print('# Benchmark results\n')
    for path in sorted(glob.glob(os.path.join(root, '*', '*.json'))):
        try:
            with open(path) as stream:
                result = json.load(stream)
        except (OSError, ValueError):
            continue
        if 'suite' not in result or 'command' not in result:
            continue      # not a suite result (e.g. detection_stream.json)
        folder = os.path.relpath(os.path.dirname(path), root)
        print('## %s: %s\n' % (result['suite'], folder))
        print('`%s`  (seed %s, %s s wall)\n'
              % (result['command'], result.get('seed'), result.get('wall_time_s')))
        if result.get('skipped'):
            print('Skipped: %s\n' % result['skipped'])
            continue
        md = os.path.splitext(path)[0] + '.md'
        if os.path.isfile(md):
            with open(md) as stream:
                lines = stream.read().splitlines()
            # The suite file starts with its own title and command: keep the tables.
            body = [line for line in lines[1:]
                    if not line.startswith(('Command:', 'Wall time:'))]
            print('\n'.join(body).strip() + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
