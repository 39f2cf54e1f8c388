#!/usr/bin/python3
"""Fit the lost detector YAML from detection-suite training runs, or score YAMLs on held-out runs.

Calibrate (training runs only: the lab and Stata basement maps, seeds >= 100)::

    rosrun lost_and_found bench detection --map maps/lab.yaml --trials 12 --seed 100 \\
        --out /tmp/calib_train_lab_s100
    /usr/bin/python3 tools/calibrate_detector.py /tmp/calib_train_lab_s100 [...] \\
        --open-beams off --out config/lost_detector.yaml [--date YYYY-MM-DD]
    /usr/bin/python3 tools/calibrate_detector.py /tmp/calib_train_lab_s100 [...] \\
        --open-beams on --out config/lost_detector_open_beams.yaml [--date YYYY-MM-DD]

The first is the shipped default, for a laser that reports no return as NaN (a TurtleBot2's
Kinect through depthimage_to_laserscan) or as +inf; the second is for a laser that reports it as
+inf (REP 117) only. Each file's header names itself by its scan_check/open_beams.

Or keep a generated YAML's fit and choose only ``scan_check/through_lost`` (the through share of
the scan that makes a reading lost on its own) on the training runs; ``--through-lost``
alone instead adds it to the full grid search above (each value multiplies its time)::

    /usr/bin/python3 tools/calibrate_detector.py /tmp/calib_train_lab_s100 [...] \
        --keep-fit config/lost_detector.yaml --through-lost 1 0.4 0.3 0.25 0.2 \
        --out config/lost_detector.yaml [--date YYYY-MM-DD] [--burst K N S E]

``--burst K N S E`` also writes the burst rule (``scan_check/burst_count`` K,
``burst_window`` N, ``burst_share`` S, ``burst_min_span`` E; tools/detector_variants.py
``--variant span`` chooses them on the same training runs) with its training score; without
it a burst rule of the base is left out (off).

Evaluate one or more YAMLs offline on recorded streams (held out: the office, Willow Garage, Intel
and ACES maps, seeds 0-99), on identical inputs::

    /usr/bin/python3 tools/calibrate_detector.py --evaluate /tmp/calib_eval_office_shipped \\
        --config config/lost_detector.yaml --config /tmp/calibrated_lost_detector.yaml

Or score YAMLs on the replays of a real-logs run (the Carmen logs; held out): false alarms on
the unmodified logs, and the spliced kidnaps detected::

    /usr/bin/python3 tools/calibrate_detector.py --evaluate-real-logs build/bench/real_logs \\
        --config config/lost_detector.yaml --config /tmp/other.yaml

Or fit a YAML for one robot from its own log, replayed by a real-logs run (never the shipped
file; hold the robot's other logs out and score it on them with --evaluate-real-logs)::

    /usr/bin/python3 tools/calibrate_detector.py --real-logs build/bench/real_logs --log intel \\
        --profile stock --out /tmp/intel_lost_detector.yaml

Run with /usr/bin/python3 and the catkin devel space sourced (the package must be importable).
The logic is in :mod:`lost_and_found.bench.calibration`.
"""
import argparse
import dataclasses
import datetime
import os
import sys
import time

from lost_and_found.bench import calibration, detectors, report
from lost_and_found.core.lost_detector import LostDetectorConfig


def parser():
    """The command line."""
    p = argparse.ArgumentParser(
        description='Calibrate config/lost_detector.yaml (--open-beams off) or '
        'config/lost_detector_open_beams.yaml (--open-beams on) from detection-suite training '
        'runs (lab and Stata basement maps, seeds >= 100), or --evaluate YAMLs on held-out '
        'runs.')
    p.add_argument('train', nargs='*', metavar='TRAIN_DIR',
                   help='output folders of `bench detection` training runs')
    p.add_argument('--out', help='YAML to write (e.g. config/lost_detector.yaml)')
    p.add_argument('--date', help='date written in the header, YYYY-MM-DD (default: today, '
                   'UTC); the same inputs and date give a byte-identical file')
    p.add_argument('--jobs', type=int, default=os.cpu_count() or 1,
                   help='processes fitting the candidate scan_check/min_range, open_beams and '
                   'short_weight values side by side (default: one per CPU; the file does not '
                   'depend on it)')
    p.add_argument('--min-ranges', nargs='+', type=float, metavar='M',
                   help='the scan_check/min_range values (m) to try (default: every one the '
                   'training runs recorded, %s); each is tried without and with open beams'
                   % ', '.join('%g' % m for m in calibration.MIN_RANGES))
    p.add_argument('--open-beams', choices=('both', 'off', 'on'), default='both',
                   help='the scan_check/open_beams values to try (default both; "off" for a '
                   'laser whose driver reports no return as NaN, such as a Kinect through '
                   'depthimage_to_laserscan: it gives open beams nothing to use; "off" '
                   'regenerates config/lost_detector.yaml, "on" '
                   'config/lost_detector_open_beams.yaml)')
    p.add_argument('--short-weights', nargs='+', type=float, metavar='W',
                   help='the scan_check/short_weight values to try, each in [0, 1] (default: '
                   '%s)' % ', '.join('%g' % w for w in calibration.SHORT_WEIGHTS))
    p.add_argument('--through-lost', nargs='+', type=float, metavar='R',
                   help='the scan_check/through_lost values the grid search tries, each in '
                   '(0, 1] (default: 1 only, the rule off; every value multiplies the search '
                   'time)')
    p.add_argument('--keep-fit', metavar='BASE_YAML',
                   help='keep this generated YAML\'s classifier, windows and scan check and '
                   'choose only scan_check/through_lost (among --through-lost) on TRAIN_DIRs; '
                   'writes the base with that key and a header saying so')
    p.add_argument('--burst', nargs=4, type=float, metavar=('K', 'N', 'S', 'E'),
                   help='with --keep-fit: also write the burst rule, tier 2 on K of the last N '
                   'readings with a through share above S through walls more than E m apart '
                   '(scan_check/burst_*)')
    p.add_argument('--unmapped-ends', action='store_true',
                   help='with --keep-fit: also write scan_check/unmapped_ends: true (the '
                   'TRAIN_DIRs must have been measured with it: tools/remeasure_scan.py --write)')
    p.add_argument('--evaluate', nargs='+', metavar='STREAM_DIR',
                   help='score --config YAMLs on these recorded runs instead of calibrating')
    p.add_argument('--evaluate-real-logs', metavar='REAL_LOGS_DIR',
                   help='score --config YAMLs on the unmodified replays recorded by a '
                   '`bench real-logs` run (false tier-2 alarms, time in tier 2)')
    p.add_argument('--real-logs', metavar='REAL_LOGS_DIR',
                   help='fit on one log of a `bench real-logs` run instead of TRAIN_DIRs: a '
                   'YAML for that robot and localizer (with --log, --profile, --out)')
    p.add_argument('--log', help='with --real-logs: the log to fit on (intel, aces)')
    p.add_argument('--profile', default='stock',
                   help='with --real-logs: the localizer profile of the replays to fit on '
                   '(default: stock)')
    p.add_argument('--config', action='append', metavar='YAML',
                   help='with --evaluate or --evaluate-real-logs: a lost_detector YAML to '
                   'score (repeatable; default: the shipped config/lost_detector.yaml)')
    return p


def _date(text):
    if text is None:
        return datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        raise calibration.CalibrationError('--date %r: must be YYYY-MM-DD' % text) from None


def run_calibration(args):
    """Fit, search, write the YAML and check that it reproduces the training score."""
    if args.log and not args.real_logs:
        raise calibration.CalibrationError('--log %s: only with --real-logs DIR' % args.log)
    if args.burst and not args.keep_fit:
        raise calibration.CalibrationError('--burst goes with --keep-fit')
    if args.unmapped_ends and not args.keep_fit:
        raise calibration.CalibrationError('--unmapped-ends goes with --keep-fit')
    if args.real_logs and (args.train or not args.log):
        raise calibration.CalibrationError('--real-logs fits on one log: give --log NAME and '
                                           'no TRAIN_DIR')
    if not (args.train or args.real_logs) or not args.out:
        raise calibration.CalibrationError('give TRAIN_DIR ... and --out YAML (or --evaluate)')
    date = _date(args.date)
    # Before the search (tens of minutes), not after it: a folder that is not there.
    folder = os.path.dirname(os.path.abspath(args.out))
    if os.path.isdir(args.out):
        raise calibration.CalibrationError('--out %s: a folder; give the YAML file to write'
                                           % args.out)
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise calibration.CalibrationError('--out %s: %s does not exist or is not writable '
                                           '(create it first)' % (args.out, folder))
    # A shipped file is only ever regenerated with its own open_beams (--keep-fit: below).
    shipped = shipped_open_beams(args.out)
    choice = {True: 'on', False: 'off'}.get(shipped)
    if not args.keep_fit and shipped is not None and \
            (args.real_logs or args.open_beams != choice):
        raise calibration.CalibrationError(
            '--out %s: the shipped %s is fitted %s open beams; regenerate it with '
            '--open-beams %s (TRAIN_DIRs only), or write elsewhere' % (
                args.out, calibration.target_file(shipped),
                'with' if shipped else 'without', choice))
    if args.real_logs:
        recordings = calibration.load_real_log_recordings(args.real_logs, args.log,
                                                          args.profile)
        names = ['%s %s' % (args.log, 'unmodified' if r.trials[0]['kind'] == 'unmodified'
                            else 'spliced at %.1f s' % r.trials[0]['t_event'])
                 for r in recordings]
        robot_logs = (args.real_logs, args.log, args.profile, args.out)
    else:
        recordings = [calibration.load_recording(path) for path in args.train]
        names, robot_logs = args.train, None
    for recording in recordings:
        if robot_logs is None:
            calibration.check_training(recording)
        print('training: %s (map %s, seed %s): %d readings, %d trials%s' % (
            recording.path, recording.label, recording.seed, len(recording.readings),
            len(recording.trials), ' (inferred)' if recording.trials_inferred else ''))
    if args.keep_fit:
        return keep_fit(args, recordings, date)
    options = []
    for min_range in args.min_ranges or ():
        missing = [r.path for r in recordings if min_range not in r.min_ranges]
        if missing:
            raise calibration.CalibrationError(
                '--min-ranges %g: not recorded by %s (they have %s)' % (
                    min_range, ', '.join(missing),
                    ', '.join('%g' % m for m in recordings[0].min_ranges) or 'none'))
    if args.min_ranges:
        options = ['--min-ranges'] + ['%g' % m for m in args.min_ranges]
    open_beams = {'both': calibration.OPEN_BEAMS, 'off': (False,), 'on': (True,)}[
        args.open_beams]
    if args.open_beams != 'both':
        options += ['--open-beams', args.open_beams]
    for name, values, ok in (('--short-weights', args.short_weights, lambda v: 0 <= v <= 1),
                             ('--through-lost', args.through_lost, lambda v: 0 < v <= 1)):
        bad = [v for v in values or () if not ok(v)]
        if bad:
            raise calibration.CalibrationError('%s %s: out of range' % (
                name, ' '.join('%g' % v for v in bad)))
        if values:
            options += [name] + ['%g' % v for v in values]
    grid = calibration.Grid(through_lost=tuple(sorted(set(args.through_lost), reverse=True))) \
        if args.through_lost else None
    combinations = sum(1 for _ in (grid or calibration.Grid()).combinations())
    print('fit: a grid search of %d combinations per candidate (open_beams, min_range, '
          'short_weight) in up to %d processes; a line as each ends (minutes each)'
          % (combinations, args.jobs), flush=True)
    started = time.monotonic()

    def progress(done, total, candidate, search):
        print('  candidate %d/%d (open_beams %s, min_range %g, short_weight %g) after %.0f s: '
              '%s' % (done, total, 'on' if candidate[0] else 'off', candidate[1], candidate[2],
                      time.monotonic() - started, calibration.score_sentence(search.score)),
              flush=True)

    result = calibration.calibrate(
        recordings, grid=grid, min_ranges=tuple(args.min_ranges or calibration.MIN_RANGES),
        short_weights=tuple(args.short_weights or calibration.SHORT_WEIGHTS),
        open_beams=open_beams, jobs=args.jobs, held_out_check=robot_logs is None,
        progress=progress)
    text = calibration.render_yaml(result, names, date, options, robot_logs)
    scratch = args.out + '.tmp'
    with open(scratch, 'w') as stream:
        stream.write(text)
    # The file as the node would load it must score exactly what the search reported (the
    # node's own code path, not the grid's shortcut); only then does it replace --out.
    config = detectors.load_detector_config(scratch)
    check = calibration.evaluate(recordings, config)
    if calibration.objective(check) != calibration.objective(result.search.score):
        raise calibration.CalibrationError(
            '%s does not reproduce the training score (%s vs %s); left in %s' % (
                args.out, calibration.score_sentence(check),
                calibration.score_sentence(result.search.score), scratch))
    os.replace(scratch, args.out)
    fit, search = result.fit, result.search
    target = calibration.target_file(search.config.open_beams)
    if robot_logs is None and os.path.basename(args.out) != os.path.basename(target):
        print('note: fitted with scan_check/open_beams %s, so its header names %s, not %s' % (
            str(search.config.open_beams).lower(), target, os.path.basename(args.out)))
    print('labels: %(normal)d normal, %(lost)d lost, %(ambiguous)d ambiguous' % result.labels)
    print('fit: slice_mu %s, slice_sigma %s, tier0_normal_prior %s' % (
        list(fit.slice_mu), list(fit.slice_sigma), fit.tier0_normal_prior))
    for open_beams, min_range, short_weight, score in result.opens:
        print('scan_check/open_beams %s (best min_range %s, short_weight %s): %s' % (
            open_beams, min_range, short_weight, calibration.score_sentence(score)))
    for min_range, short_weight, score in result.ranges:
        print('scan_check/min_range %s (best short_weight %s, at the chosen open_beams): %s' % (
            min_range, short_weight, calibration.score_sentence(score)))
    for short_weight, score in result.weights:
        print('scan_check/short_weight %s (at the chosen min_range): %s' % (
            short_weight, calibration.score_sentence(score)))
    print('grid: %d combinations, %d without false alarms, %d tied; chosen %s' % (
        search.tried, search.zero_false_alarms, search.ties, search.params))
    print('margin (next lower value: false alarms): %s' % search.margin)
    print(calibration.frontier_sentence(search))
    for count, _, _, params in search.frontier:
        print('  %d false alarm(s): %s' % (count, params))
    print('per reading: %d/%d lost readings and %d/%d normal readings labelled lost' % (
        result.quality['lost']['labelled_lost'], result.quality['lost']['readings'],
        result.quality['normal']['labelled_lost'], result.quality['normal']['readings']))
    print()
    print_training_score(args.out, check)


def print_training_score(out, check):
    """The written file's training score, as a Markdown table, and where it went."""
    print('Training score (not held out):')
    print()
    print(report.markdown_table(calibration.EVALUATION_HEADERS,
                                [calibration.evaluation_rows('`%s`' % out, check)]))
    print()
    print('wrote %s' % out)


def shipped_open_beams(out):
    """The scan_check/open_beams of the shipped file ``out`` is (True, False), or None when
    ``out`` is not one of them."""
    for path, open_beams in ((calibration.TARGET_PATH, False),
                             (calibration.OPEN_BEAMS_TARGET_PATH, True)):
        if os.path.realpath(out) == os.path.realpath(path):
            return open_beams
    return None


def keep_fit(args, recordings, date):
    """--keep-fit: choose scan_check/through_lost for a generated YAML, write, check."""
    if not args.through_lost:
        raise calibration.CalibrationError('--keep-fit needs --through-lost R [R ...]')
    for option in ('min_ranges', 'short_weights', 'real_logs'):
        if getattr(args, option):
            raise calibration.CalibrationError('--keep-fit keeps the base\'s scan check: no --%s'
                                               % option.replace('_', '-'))
    if args.open_beams != 'both':
        raise calibration.CalibrationError('--keep-fit keeps the base\'s scan_check/open_beams: '
                                           'no --open-beams')
    base = detectors.load_detector_config(args.keep_fit)
    # A shipped file is only ever written from a base with its own open_beams.
    shipped = shipped_open_beams(args.out)
    if shipped is not None and base.open_beams != shipped:
        raise calibration.CalibrationError(
            '--out %s: the shipped %s is fitted %s open beams, and --keep-fit %s has '
            'scan_check/open_beams %s' % (
                args.out, calibration.target_file(shipped), 'with' if shipped else 'without',
                args.keep_fit, str(base.open_beams).lower()))
    with open(args.keep_fit) as stream:
        base_text = stream.read()
    values = tuple(sorted(set(args.through_lost), reverse=True))
    # Scored without the burst rule (its keys as a file without them loads), then with it.
    off = LostDetectorConfig()
    base = dataclasses.replace(base, **{key: getattr(off, key) for key in calibration.BURST_KEYS})
    if args.unmapped_ends:
        base = dataclasses.replace(base, unmapped_ends=True)
    config, scores = calibration.choose_through_lost(recordings, base, values)
    chosen = burst_score = dict(scores)[config.through_lost]
    command = '/usr/bin/python3 tools/calibrate_detector.py %s --keep-fit %s --through-lost %s ' \
        '--date %s --out %s' % (' '.join(args.train), args.keep_fit,
                                ' '.join('%g' % v for v in values), date, args.out)
    if args.unmapped_ends:
        command += ' --unmapped-ends'
    if args.burst:
        config = burst_config(config, args.burst)
        unscored = [r.path for r in recordings
                    if r.spans_at(config.min_range, config.open_beams) is None]
        if unscored:
            raise calibration.CalibrationError(
                '--burst: %s recorded without the through span as %s measures it (scan_span, '
                'or scan_spans for the other open_beams): the rule would never fire on them; '
                'record them again' % (', '.join(unscored), args.keep_fit))
        chosen = burst_score = calibration.evaluate(recordings, config)
        command += ' --burst %s' % ' '.join('%g' % v for v in args.burst)
    text = calibration.render_keep_fit(base_text, config, scores, args.train, date, command,
                                       burst_score if args.burst else None)
    scratch = args.out + '.tmp'
    with open(scratch, 'w') as stream:
        stream.write(text)
    written = detectors.load_detector_config(scratch)
    check = calibration.evaluate(recordings, written)
    if written != config or calibration.objective(check) != calibration.objective(chosen):
        raise calibration.CalibrationError('%s does not load as the chosen config or does not '
                                           'reproduce its training score; left in %s'
                                           % (args.out, scratch))
    os.replace(scratch, args.out)
    for value, score in scores:
        print('scan_check/through_lost %g: %s' % (value, calibration.score_sentence(score)))
    print('chosen: scan_check/through_lost %g' % config.through_lost)
    if args.burst:
        print('with the burst rule (%d of %d above %g, span above %g m): %s' % (
            config.burst_count, config.burst_window, config.burst_share, config.burst_min_span,
            calibration.score_sentence(burst_score)))
    print()
    print_training_score(args.out, check)


def burst_config(config, values):
    """``config`` with the burst rule of ``--burst K N S E``.

    Raises:
        CalibrationError: naming the bad value (K and N must be whole numbers; the rest as
            LostDetectorConfig.validate says).
    """
    count, window, share, min_span = values
    for name, value in (('K', count), ('N', window)):
        if value != int(value):
            raise calibration.CalibrationError('--burst %s=%g: must be a whole number'
                                               % (name, value))
    config = dataclasses.replace(config, burst_count=int(count), burst_window=int(window),
                                 burst_share=float(share), burst_min_span=float(min_span))
    try:
        config.validate()
    except ValueError as error:
        raise calibration.CalibrationError('--burst: %s' % error) from None
    return config


def run_evaluation(args):
    """Print the scores of every --config on the --evaluate runs."""
    configs = args.config or [calibration.TARGET_PATH]
    recordings = [calibration.load_recording(path) for path in args.evaluate]
    for recording in recordings:
        held_out = True
        try:
            calibration.check_training(recording)
            held_out = False
        except calibration.CalibrationError:
            pass
        print('%s: map %s, seed %s, %d readings, %d trials%s%s' % (
            recording.path, recording.label, recording.seed, len(recording.readings),
            len(recording.trials), ' (trials inferred from the phases)'
            if recording.trials_inferred else '',
            '' if held_out else '  WARNING: a training run, not held out'))
    rows = []
    per_run = []
    for path in configs:
        config = detectors.load_detector_config(path)
        unscored = [r.path for r in recordings if r.spans_at(config.min_range,
                                                             config.open_beams) is None]
        if config.burst_count and unscored:
            print('NOTE: %s recorded without the through span as %s measures it (scan_span, or '
                  'scan_spans for the other open_beams): its burst rule (scan_check/burst_count '
                  '%d) never fires on them' % (', '.join(unscored), path, config.burst_count))
        rows.append(calibration.evaluation_rows('`%s`' % path,
                                                calibration.evaluate(recordings, config)))
        if len(recordings) > 1:
            for recording in recordings:
                per_run.append(calibration.evaluation_rows(
                    '`%s` on %s' % (path, recording.path),
                    calibration.evaluate([recording], config)))
    print()
    print(report.markdown_table(calibration.EVALUATION_HEADERS, rows))
    if per_run:
        print()
        print(report.markdown_table(calibration.EVALUATION_HEADERS, per_run))


def run_real_logs_evaluation(args):
    """Print the false alarms of every --config on a real-logs run's unmodified replays, and
    the spliced kidnaps it detects (runs that wrote their spliced copies' streams)."""
    import json
    from lost_and_found.bench import real_logs
    documents = []
    for name in ('real_logs.json', 'real_logs_stream.json'):
        path = os.path.join(args.evaluate_real_logs, name)
        try:
            with open(path) as stream:
                documents.append(json.load(stream))
        except (OSError, ValueError) as error:
            raise calibration.CalibrationError('%s: %s (run `rosrun lost_and_found bench '
                                               'real-logs --out DIR` first)' % (path, error))
    rows, splices = [], []
    for path in args.config or [calibration.TARGET_PATH]:
        config = detectors.load_detector_config(path)
        for entry in real_logs.rescore_unmodified(documents[0], documents[1], config):
            score = entry['scores']
            rows.append(['`%s`' % path, entry['log'], entry['profile'],
                         str(score['false_alarms']), str(score['true_alarms']),
                         report.fmt(score['time_tier2_share'], 1, '%')])
        spliced = real_logs.rescore_spliced(documents[1], config)
        for log, profile in sorted({(e['log'], e['profile']) for e in spliced}):
            d = real_logs.summarize_splices([e['scores'] for e in spliced
                                             if (e['log'], e['profile']) == (log, profile)])
            splices.append(['`%s`' % path, log, profile, str(d['splices']),
                            str(d['alarmed_before_splice']),
                            '%d/%d' % (d['detected'], d['delocalized']),
                            report.fmt(d['delay_s']['median'], 1)])
    print(report.markdown_table(['config', 'log', 'localizer profile', 'false tier-2 alarms',
                                 'true alarms', 'time in tier 2'], rows))
    if splices:
        print()
        print(report.markdown_table(
            ['config', 'log', 'localizer profile', 'spliced kidnaps', 'in tier 2 before',
             'detected within %.0f s (of the rest, delocalized)' % real_logs.WITHIN,
             'median delay (s)'], splices))


def main(argv=None):
    """Entry point; exit 1 with a message naming the bad input."""
    args = parser().parse_args(argv)
    try:
        if args.evaluate_real_logs:
            run_real_logs_evaluation(args)
        elif args.evaluate:
            run_evaluation(args)
        else:
            run_calibration(args)
    except ValueError as error:   # CalibrationError, ConfigError, bad YAML: all name the input
        sys.stderr.write('calibrate_detector: %s\n' % error)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
