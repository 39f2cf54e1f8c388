#!/usr/bin/python3
"""Score another lost_detector YAML on a finished detection-suite run, on identical inputs.

The detection suite records every amcl pose, the scan misses by kind and the ground truth of a
run (``detection_stream.json``, ``detection_truth.json``); this replays the detectors over them
with ``--detector-config`` and writes the suite's own tables and plots, so that two YAMLs are
compared on the same poses rather than on two runs of the simulator::

    /usr/bin/python3 tools/rescore_detection.py build/bench/office \\
        --detector-config /tmp/other.yaml --out build/bench_rescored/office

Writes ``OUT/detection.json``, ``OUT/detection.md`` and the delay plots. Run with
/usr/bin/python3 and the catkin devel space sourced (the package must be importable). The
logic is :func:`lost_and_found.bench.detection.rescore`.
"""
import argparse
import os
import shlex
import sys

from lost_and_found.bench import detection, detectors, report


def parser():
    """The command line."""
    p = argparse.ArgumentParser(description='Score a lost_detector YAML on a finished '
                                'detection-suite run (its recorded poses and truth).')
    p.add_argument('run', metavar='RUN_DIR', help='output folder of `bench detection`')
    p.add_argument('--detector-config', required=True, metavar='YAML',
                   help='the lost_detector YAML to score')
    p.add_argument('--out', required=True, help='folder to write the tables and plots into')
    p.add_argument('--label', help='the map\'s name in the tables (default: the run\'s)')
    p.add_argument('--map', help='the run\'s map_server YAML, for the strip rule '
                   '(strip_check/count; default: the map the run\'s detection.json names)')
    return p


def main(argv=None):
    """Rescore; exit 1 with a message on bad input."""
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    if os.path.realpath(args.out) == os.path.realpath(args.run):
        print('rescore_detection: --out %s is the run\'s own folder: give another (the run\'s '
              'tables would be overwritten)' % args.out, file=sys.stderr)
        return 1
    try:
        config = detectors.load_detector_config(args.detector_config)
        result = detection.rescore(args.run, config, args.out, args.label, args.map)
        if config.burst_count and not result['spans_recorded']:
            print('rescore_detection: NOTE: %s was recorded without the through span as %s '
                  'measures it (scan_span, or scan_spans for the other open_beams): its burst '
                  'rule never fires on it' % (args.run, args.detector_config), file=sys.stderr)
    except ValueError as error:
        print('rescore_detection: %s' % error, file=sys.stderr)
        return 1
    command = '/usr/bin/python3 tools/rescore_detection.py ' + shlex.join(argv)
    result.update({'suite': 'detection', 'command': command, 'rescored_from': args.run,
                   'detector_config': args.detector_config})
    report.write_json(os.path.join(args.out, 'detection.json'), result)
    report.write_markdown(os.path.join(args.out, 'detection.md'),
                          'detection (%s), rescored' % result['label'], command,
                          result['markdown'], result['plots'])
    print(result['markdown'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
