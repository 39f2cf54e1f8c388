#!/usr/bin/python3
"""Adapt the lost detector YAML to your robot's localizer from a bag of localized driving.

The shipped YAML's covariance model is the simulator's amcl; if ``/lost_detector/status``
reads ``lost`` on your robot while it is plainly localized, your amcl's cloud is wider than
the simulated one. Record your robot driving about (localized, ten minutes or more, the places
it works in), then::

    rosbag record -O localized.bag /amcl_pose /scan /tf /tf_static
    /usr/bin/python3 tools/adapt_detector.py localized.bag --map MAP.yaml \
        --out ~/my_lost_detector.yaml
    roslaunch lost_and_found lost_and_found.launch fiducial_map:=$HOME/my_tags.yaml \
        lost_detector_config:=$HOME/my_lost_detector.yaml

It scales the covariance classes of ``--config`` (default: the shipped
``config/lost_detector.yaml``) by the ratio of your amcl's median standard deviations to the
simulated robot's, over the poses whose scan agrees with the map (every pose without
``--map``; :mod:`lost_and_found.bench.adapt` says how, and what it assumes), and writes a YAML
that says so in its header; nothing else changes. Or take the readings from a
``bench real-logs`` run's unmodified replay (how bench/RESULTS.md evaluates it)::

    /usr/bin/python3 tools/adapt_detector.py --real-logs build/bench/real_logs --log intel \\
        --profile stock --out /tmp/intel_adapted.yaml

Run with /usr/bin/python3 and the catkin devel space sourced (the package must be importable).
"""
import argparse
import dataclasses
import datetime
import os
import shlex
import sys

from lost_and_found.bench import adapt, calibration, detectors


def parser():
    """The command line."""
    p = argparse.ArgumentParser(
        description='Scale the lost detector YAML\'s covariance classes to your localizer, '
        'from amcl poses recorded while the robot was localized.')
    p.add_argument('bag', nargs='?', help='a bag with the robot\'s amcl poses')
    p.add_argument('--topic', default=adapt.TOPIC,
                   help='the amcl pose topic in the bag (default %s)' % adapt.TOPIC)
    p.add_argument('--map', metavar='MAP_YAML',
                   help='with a BAG: the map_server YAML of the map the robot drove on; then '
                   'the bag\'s scans (with /tf_static and /tf for the laser mount) say which '
                   'poses were localized, and only those count (recommended)')
    p.add_argument('--scan-topic', default='/scan',
                   help='with --map: the laser topic in the bag (default /scan)')
    p.add_argument('--base-frame',
                   help='with --map: the robot frame amcl\'s pose is of (default: the YAML\'s '
                   'scan_check/base_frame, base_footprint)')
    p.add_argument('--all-readings', action='store_true',
                   help='use every reading, also those whose scan disagrees with the map')
    p.add_argument('--real-logs', metavar='REAL_LOGS_DIR',
                   help='instead of a bag: the unmodified replay of a `bench real-logs` run')
    p.add_argument('--log', help='with --real-logs: the log (intel, aces)')
    p.add_argument('--profile', default='stock',
                   help='with --real-logs: the localizer profile (default: stock)')
    p.add_argument('--settle', type=float, default=adapt.SETTLE,
                   help='seconds skipped at the start, amcl converging (default %g)'
                   % adapt.SETTLE)
    p.add_argument('--config', default=calibration.TARGET_PATH,
                   help='the lost_detector YAML to adapt, one fitted on the simulator '
                   '(default: the shipped %s; or the shipped open-beam file)'
                   % calibration.TARGET)
    p.add_argument('--keep-through-lost', action='store_true',
                   help='keep the source\'s scan_check/through_lost and burst rule (default: '
                   'write through_lost 1 and burst_count 0, off: '
                   'on the real Intel and ACES logs the through share raised false alarms '
                   'with adapted covariance models; bench/RESULTS.md, "Beams through walls")')
    p.add_argument('--out', required=True, help='the YAML to write')
    p.add_argument('--date', help='date written in the header, YYYY-MM-DD (default: today, '
                   'UTC)')
    return p


def adapt_config(args, argv):
    """Read, scale, write; return the lines printed."""
    if bool(args.bag) == bool(args.real_logs):
        raise adapt.AdaptError('give a BAG or --real-logs DIR --log NAME, not both or neither')
    if args.real_logs and not args.log:
        raise adapt.AdaptError('--real-logs needs --log NAME')
    if (args.map or args.base_frame) and not args.bag:
        raise adapt.AdaptError('--map and --base-frame go with a BAG (a real-logs replay has '
                               'its scan feature already)')
    shipped = os.path.realpath(os.path.join(calibration.ROOT, 'config'))
    if os.path.realpath(args.out).startswith(shipped + os.sep):
        raise adapt.AdaptError('--out %s: in the package\'s config folder, whose files are '
                               'shipped; write your robot\'s YAML elsewhere' % args.out)
    date = args.date or datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    config = detectors.load_detector_config(args.config)
    shown = os.path.relpath(args.config, calibration.ROOT) if os.path.realpath(args.config) == \
        os.path.realpath(calibration.TARGET_PATH) else args.config
    with open(args.config) as stream:
        source_text = stream.read()
    notes = []
    if args.bag:
        readings, refused_in_bag, notes = adapt.readings_from_bag(
            args.bag, args.topic, config, args.map, args.scan_topic, args.base_frame)
        source = '%s (%s%s)' % (args.bag, args.topic, ', %s on %s' % (args.scan_topic, args.map)
                                if args.map else '')
    else:
        readings = adapt.readings_from_real_logs(args.real_logs, args.log, args.profile,
                                                 config)
        refused_in_bag = {}
        source = '%s: log %s, localizer profile %s, unmodified replay' % (
            args.real_logs, args.log, args.profile)
    used = adapt.after_settle(readings, args.settle)
    scanned = any(r[5] is not None for r in used)
    if args.map and not scanned and not args.all_readings:
        raise adapt.AdaptError('--map %s: no pose got the scan feature, so none can be checked '
                               'against the map (%s); fix that, or use --all-readings to count '
                               'every pose' % (args.map, '; '.join(notes) or 'no poses'))
    if scanned and not args.all_readings:
        kept, without_scan, disagreeing = adapt.agreeing(used, config)
        selection = ('%d whose scan agrees with the map (%d without the scan feature and %d '
                     'whose scan disagrees left out)' % (len(kept), without_scan, disagreeing))
        if len(kept) < adapt.MIN_READINGS and disagreeing > len(kept):
            raise adapt.AdaptError(
                'only %d of the %d poses after the settle have a scan that agrees with the map '
                '(%d disagree): is %s the map the robot ran on, origin included, and was it '
                'localized? --all-readings counts every pose' % (
                    len(kept), len(used), disagreeing,
                    args.map or 'the replay\'s map'))
    else:
        kept = used
        selection = 'all of them (%s)' % (
            '--all-readings' if scanned or args.map else 'no scan feature: give --map and '
            'record the laser and /tf_static to count only the readings whose scan agrees with '
            'the map' if args.bag else 'no scan feature')
    features, refused = adapt.features_of(kept)
    for kind, count in refused_in_bag.items():
        refused[kind] = refused.get(kind, 0) + count
    factors, medians = adapt.scale_factors(features, refused)
    by_third, uneven = adapt.thirds(features)
    adapted = dataclasses.replace(config, slice_mu=tuple(adapt.scaled(config.slice_mu, factors)),
                                  slice_sigma=tuple(adapt.scaled(config.slice_sigma, factors)))
    shares = (adapt.lost_share(features, config), adapt.lost_share(features, adapted))
    summary = [
        'Readings: %d amcl poses from %s; %d after the first %g s; used: %s%s.' % (
            len(readings), source, len(used), args.settle, selection,
            '; refused as the node would: %s' % adapt.refused_text(refused)
            if refused else ''),
        'Median sigma_xy %.4g m, sigma_theta %.4g rad; the simulated localizer that %s was '
        'fitted on: %.4g m and %.4g rad: scale factors %.3g (xy) and %.3g (theta).' % (
            medians[0], medians[1], shown, adapt.SIM_MEDIANS[0], adapt.SIM_MEDIANS[1],
            factors[0], factors[1]),
        'Readings the covariance alone labels lost: %.0f %% with %s, %.0f %% adapted.' % (
            100 * shares[0], shown, 100 * shares[1]),
        'The x-y factor of each third of the recording: %s.%s' % (
            ', '.join('%.3g' % f for f in by_third),
            ' WARNING: they differ by more than %gx: a stretch in which amcl had lost track '
            '(without --map every pose counts), or places where its cloud is wider (long '
            'corridors: the simulated one differs 1.7x between two maps); check the '
            'recording, record again through the places the robot works in, or cut the bag '
            '(rosbag filter)' % adapt.SPREAD if uneven else ''),
    ]
    command = '/usr/bin/python3 tools/adapt_detector.py ' + shlex.join(argv)
    header = [
        'lost_detector parameters ADAPTED by tools/adapt_detector.py on %s to one robot\'s '
        'localizer: %s' % (date, command),
        'Source: %s, with modified_prob_classifier/slice_mu and slice_sigma (both classes) '
        'multiplied by the factors below; every other number, and every comment below this '
        'header (they describe the source\'s own fit), is the source\'s: regenerating the '
        'source does not regenerate this file; run this tool again.' % shown,
    ] + summary + notes + ([] if args.keep_through_lost or config.through_lost >= 1.0 else [
        'scan_check/through_lost set to 1 (off; the source has %g), and the burst rule '
        '(scan_check/burst_count, which reads the same through share) to 0: on the real Intel '
        'and ACES logs, with covariance models adapted like this one, the through share raised '
        'false alarms held out (bench/RESULTS.md, "Beams through walls"); --keep-through-lost '
        'keeps the source\'s.' % config.through_lost]) + [
        'Check /lost_detector/status on the robot with this file before acting on it: the '
        'factors assume that the readings used were localized, and that the localizer\'s '
        'cloud is wider (or narrower) than the simulated one by the same factor whether it is '
        'right or lost.',
    ]
    text = adapt.render(source_text, config, factors, header,
                        None if args.keep_through_lost else 1.0)
    detectors.config_from_text(text, args.out)   # what is written loads in the node
    with open(args.out, 'w') as stream:
        stream.write(text)
    return summary + notes + ['Wrote %s.' % args.out]


def main(argv=None):
    """Entry point; exit 1 with a message naming the bad input."""
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    try:
        lines = adapt_config(args, argv)
    except (ValueError, OSError) as error:   # AdaptError, ConfigError, bad YAML, a bad path
        sys.stderr.write('adapt_detector: %s\n' % error)
        return 1
    print('\n'.join(lines))
    return 0


if __name__ == '__main__':
    sys.exit(main())
