#!/usr/bin/python3
"""Try other ways of using the lost detector's evidence, offline, on recorded streams.

The ``span`` variant's choice ships (the default YAML's burst rule, ``scan_check/burst_*``);
the others did not. This is how the results of "More training runs, and other ways to use the same
evidence" (``cusum``, ``split``), of "Bursts of beams through walls" (``burst``), of
"Bursts of beams through walls all over the map" (``span``) and of "A short window of sure
readings" (``sure``) in bench/RESULTS.md were measured, and the place to try the next idea
against the same inputs::

    /usr/bin/python3 tools/detector_variants.py TRAIN_DIR [...] --evaluate EVAL_DIR [...] \\
        --variant window|cusum|split|burst|span|sure [--allow N] \\
        [--config config/lost_detector.yaml]

Variants (each chosen on the training runs by the calibration's own objective: no false tier-2
alarm first, then the most delocalizations caught within 15 s of driving; then scored on the
held-out runs as the detection suite scores them). ``--allow N`` lets the choice take up to N
false tier-2 alarms on the training runs (normal driving plus settling) before the alarms
count against it, the calibration's zero being ``--allow 0``:

- ``window``: the shipped detector itself (its classifier and its rule: a count of thresholded
  readings in a window), its tier parameters searched over the calibration's grid; with
  ``--allow 0`` it chooses what the calibration chose for the shipped YAML.
- ``cusum``: the shipped classifier's per-reading evidence accumulated by Page's CUSUM test
  instead of a count of thresholded readings in a window. Each reading adds its log-likelihood
  ratio (lost vs normal, clipped to +-``clip``) minus a drift ``k``; the sum never goes below 0;
  tier 2 when it reaches ``h`` (after ``queue_min`` readings since the last reset), back to 0
  when the sum returns to 0. While settling after a reset only the scan's evidence counts, and
  a reading without a scan adds nothing (the shipped detector counts it and ignores it). A
  reading that is only moderately lost (P(lost) 0.9, under the shipped 0.99) still adds
  evidence.
- ``split``: the two kinds of scan miss as two features of the naive Bayes classifier (the
  share of beams through a mapped obstacle, and of beams that ended short in free space),
  instead of one weighed sum: unmapped clutter makes beams short, never longer than the map.
- ``burst``: the shipped detector as it is (its ``scan_check/through_lost`` included), and on
  top of it tier 2 while at least ``k`` of the last ``n`` settled readings with a through share
  had one above ``share`` (a reading without a share is skipped; a reset or the detector
  settling empties the count). After a silent delocalization the through share often comes in
  a short burst, higher than anywhere at a right pose, then drops as amcl's cloud settles on
  a wrong place that fits; the window (13 lost readings of 20) does not fill on a burst of 5.
  A model of the rule, not the node's: the burst's tier 2 lasts while the count holds, the
  node's would last until its own exit rule.
- ``span``: ``burst``, counting only the readings whose beams through walls also enter them
  more than ``min_span`` metres apart (the stream's ``scan_span``,
  :func:`lost_and_found.core.scan_agreement.through_span`). A door the map has shut lets the
  laser through at one place, under a door's width across; at a wrong pose the beams pass
  through walls all over the view. Unlike ``burst`` this is the node's own rule
  (``scan_check/burst_*``, rule 7 of core/lost_detector.py), replayed as the calibration
  replays the detector: its tier 2 is sticky as the window's. The streams must have been
  recorded with the span as ``--config`` measures it (``scan_span`` at the recording's own
  ``min_range`` and ``open_beams``, or ``scan_spans`` for the other ``open_beams``); a stream
  measured otherwise is refused. The other variants replay without spans, so a burst rule of
  ``--config`` never fires in them.
- ``sure``: the shipped detector as it is (its burst rule included, replayed with the streams'
  spans as ``span`` replays them), and the node's rule 8 on top (``scan_check/sure_*``): tier
  2 when at least ``k`` of the last ``n`` settled readings with the scan feature had a P(lost)
  above ``prob``, far above the classifier's ``prob_thresh``. amcl publishes about one reading
  per 0.2 m driven, so the window of 20 readings fills slowly after a silent delocalization
  even when every scan misses the map.

The training runs are those the calibration may fit on (lab and Stata basement, seeds >= 100);
the shipped YAML (``--config``) gives the classifier the ``cusum`` variant accumulates and the
scan check the streams are read with. Run with /usr/bin/python3 and the catkin devel space
sourced.
"""
import argparse
import dataclasses
import itertools
import math
import sys
from collections import deque

import numpy as np

from lost_and_found.bench import calibration, detectors
from lost_and_found.core.lost_detector import LostDetector

#: The ``cusum`` grid: clip, drift k, threshold h, settle readings (scan-only evidence).
CUSUM_GRID = dict(clip=(2.0, 3.0, 5.0, 8.0, 12.0, 20.0),
                  drift=(0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0),
                  threshold=(4.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 40.0, 60.0, 80.0, 120.0,
                             200.0),
                  settle=(0, 8, 16))
#: The ``split`` grid over the detector's own tier parameters.
SPLIT_GRID = dict(prob_thresh=(0.9, 0.95, 0.99, 0.995, 0.999, 0.9999, 0.99999),
                  window_meta_tier2_lost=(8, 10, 12, 15, 20),
                  ratio_thresh_detections_tier2_lost=(0.4, 0.5, 0.6, 0.7),
                  window_meta_tier0_normal=(6, 15), settle_readings=(0, 8, 16))
#: The ``burst`` grid: (k, n) readings, and the through share a reading must exceed.
BURST_GRID = dict(counts=((3, 3), (3, 4), (4, 4), (4, 5), (4, 6), (5, 6), (5, 8), (6, 8)),
                  share=(0.3, 0.4, 0.5, 0.6, 0.7, 0.8))
#: The ``span`` grid: ``BURST_GRID`` and the span (m) a reading's through beams must exceed.
SPAN_GRID = dict(BURST_GRID, min_span=(0.0, 1.0, 1.5, 2.0, 3.0))
#: The ``sure`` grid: (k, n) readings, and the P(lost) a reading must exceed.
SURE_GRID = dict(counts=((2, 3), (3, 3), (2, 4), (3, 4), (4, 4), (3, 5), (4, 5), (5, 5), (4, 6),
                         (5, 6), (6, 6), (5, 8), (6, 8)),
                 prob=(0.999, 0.9999, 0.99999, 0.999999, 0.9999999, 0.99999999))
#: Readings since a reset before tier 2 may be raised (as the shipped queue_min).
QUEUE_MIN = 5
#: Bounds of a probability turned into log-odds.
EPS = 1e-15


def log_odds(p):
    """log(p / (1 - p)), with p kept inside (EPS, 1 - EPS)."""
    p = min(max(p, EPS), 1.0 - EPS)
    return math.log(p / (1.0 - p))


def evidence(probabilities, prior_normal):
    """Per reading, the log-likelihood ratio (lost vs normal) of its features and of its scan
    alone, from :func:`calibration.reading_probabilities` (None stays None)."""
    shift = log_odds(1.0 - prior_normal)
    out = []
    for reading in probabilities:
        if reading is None:
            out.append(None)
            continue
        probability, _, scan_only = reading[:3]
        out.append((log_odds(probability) - shift,
                    None if scan_only is None else log_odds(scan_only) - shift))
    return out


def cusum_tiers(llrs, resets, clip, drift, threshold, settle, queue_min=QUEUE_MIN):
    """The tier of every reading under the CUSUM rule (see the module docstring).

    ``llrs``: :func:`evidence` per reading; ``resets``: indices before which the detector is
    reset; the first ``settle`` readings after a reset use the scan-only evidence, and one of
    them without a scan is counted and adds nothing. Tier 1 is a single reading whose evidence
    favours lost.
    """
    total, count, tier, tiers = 0.0, 0, 0, []
    for index, reading in enumerate(llrs):
        if index in resets:
            total, count, tier = 0.0, 0, 0
        if reading is None:
            tiers.append(tier)
            continue
        settling = count < settle
        count += 1
        if settling and reading[1] is None:
            tiers.append(tier)
            continue
        value = reading[1] if settling else reading[0]
        total = max(0.0, total + max(-clip, min(clip, value)) - drift)
        if tier == 2:
            tier = 2 if total > 0.0 else 0
        elif total >= threshold and count >= queue_min:
            tier = 2
        else:
            tier = 1 if value > 0.0 else 0
        tiers.append(tier)
    return tiers


def burst_tiers(probabilities, config, resets, count, window, share):
    """The shipped detector's tiers (:func:`calibration.replay_tiers`), raised to 2 while at
    least ``count`` of the last ``window`` settled readings with a through share had one above
    ``share`` (see the module docstring)."""
    detector = LostDetector(config)
    recent = deque(maxlen=window)
    tiers = []
    for index, reading in enumerate(probabilities):
        if index in resets:
            detector.reset()
            recent.clear()
        if reading is not None:     # a refused reading keeps the tier, as in replay_tiers
            probability, scanned, scan_only = reading[:3]
            through = reading[3] if len(reading) > 3 else None
            settling = detector.settling
            detector.add(scan_only if settling else probability, scanned,
                         detector.through_says_lost(through))
            if settling:
                recent.clear()
            elif through is not None:
                recent.append(through > share)
        tiers.append(2 if sum(recent) >= count else int(detector.tier))
    return tiers


def burst_config(config, candidate):
    """``config`` with the node's burst rule set to a ``span`` grid candidate."""
    (count, window), share, min_span = candidate
    return dataclasses.replace(config, burst_count=count, burst_window=window,
                               burst_share=share, burst_min_span=min_span)


def sure_config(config, candidate):
    """``config`` with the node's rule 8 set to a ``sure`` grid candidate."""
    (count, window), prob = candidate
    return dataclasses.replace(config, sure_count=count, sure_window=window, sure_prob=prob)


def span_caution(candidate):
    """:func:`burst_caution`, then the larger span."""
    return burst_caution(candidate[:2]) + (-candidate[2],)


def recorded_spans(recording, config):
    """The ``scan_span`` of every reading of a recording, in its order, for a detector that
    measures its scan as ``config`` (scan_check/min_range and open_beams).

    Raises:
        ValueError: the stream was recorded without it, or measured it with another
            min_range or open_beams (the span of the beams ``config`` uses is not in it).
    """
    if recording.spans is None and recording.beam_spans is None:
        raise ValueError('%s: no scan_span column (recorded before the span was): record it '
                         'again' % recording.path)
    spans = recording.spans_at(config.min_range, config.open_beams)
    if spans is None:
        recorded = (recording.scan_check['min_range'], recording.scan_check['open_beams'])
        raise ValueError(
            '%s: its scan_span was measured with scan_check/min_range=%r and open_beams=%r, '
            'the config measures with %r and %r, and it has no scan_spans at that min_range: '
            'record it again (bench detection)'
            % ((recording.path,) + recorded + (config.min_range, config.open_beams)))
    return spans


def burst_caution(candidate):
    """Among equal scores prefer the higher share, then the larger count of the shorter
    window."""
    (count, window), share = candidate
    return (-share, -count, window)


#: The ``sure`` grid's candidates have the ``burst`` grid's shape, the P(lost) in the share's
#: place: among equal scores the higher P(lost), then the larger count of the shorter window.
sure_caution = burst_caution


def replayed(config, configure, grid, caution, streams, probabilities, spans, allow):
    """The node's own rules replayed (:func:`calibration.replay_tiers`) with each candidate of
    ``grid`` set by ``configure(config, candidate)``: ``(chosen, its training score, its tiers
    on the held-out streams)`` (``streams``, ``probabilities`` and ``spans``: training and
    held-out lists, as :func:`weighed_probabilities` gives them)."""
    chosen, score = choose(grid, streams[0], lambda c, i: calibration.replay_tiers(
        probabilities[0][i], configure(config, c), streams[0][i].resets, spans[0][i]),
        caution, allow)
    tiers = [calibration.replay_tiers(p, configure(config, chosen), r.resets, s)
             for p, r, s in zip(probabilities[1], streams[1], spans[1])]
    return chosen, score, tiers


@dataclasses.dataclass
class SplitModel:
    """Per-class Gaussian of each feature (sigma_xy, sigma_theta, through, short), fitted on the
    rows where the feature is known; a missing feature is left out of the product. The two
    miss fractions' standard deviations are at least calibration.MIN_SCAN_SIGMA, as the
    shipped fit's (a class whose training misses are nearly all 0 would otherwise call any
    miss at all lost)."""

    mean: np.ndarray
    std: np.ndarray
    prior_normal: float

    @classmethod
    def fit(cls, features, labels):
        """Fit on labelled rows (labels calibration.NORMAL / LOST)."""
        mean, std = np.zeros((2, 4)), np.zeros((2, 4))
        for row, label in enumerate((calibration.NORMAL, calibration.LOST)):
            for column in range(4):
                values = features[(labels == label) & np.isfinite(features[:, column]), column]
                if len(values) < 2:
                    raise calibration.CalibrationError('too few readings to fit feature %d of '
                                                       'class %d' % (column, label))
                floor = calibration.MIN_SCAN_SIGMA if column >= 2 else 1e-3
                mean[row, column] = values.mean()
                std[row, column] = max(values.std(), floor)
        return cls(mean, std, float(np.mean(labels == calibration.NORMAL)))

    def p_lost(self, row, columns):
        """P(lost) of one feature row from the given columns (those that are finite)."""
        score = [math.log(1.0 - self.prior_normal), math.log(self.prior_normal)]
        for cls_index, cls_row in ((0, 1), (1, 0)):
            for column in columns:
                if np.isfinite(row[column]):
                    z = (row[column] - self.mean[cls_row, column]) / self.std[cls_row, column]
                    score[cls_index] += -0.5 * z * z - math.log(self.std[cls_row, column])
        top = max(score)
        lost, normal = math.exp(score[0] - top), math.exp(score[1] - top)
        return lost / (lost + normal)

    def probabilities(self, features):
        """``(P(lost), scanned, P(lost | scan))`` per row, as reading_probabilities gives
        (without its through share: this model has no scan_check/through_lost)."""
        out = []
        for row in features:
            if not np.all(np.isfinite(row[:2])):
                out.append(None)
                continue
            scanned = bool(np.isfinite(row[2]) or np.isfinite(row[3]))
            out.append((self.p_lost(row, (0, 1, 2, 3)), scanned,
                        self.p_lost(row, (2, 3)) if scanned else None))
        return out


def split_features(recording, config):
    """(sigma_xy, sigma_theta, through, short) per reading, the misses measured with the
    config's scan_check/min_range and open_beams (NaN where a reading has no scan)."""
    out = np.full((len(recording.readings), 4), np.nan)
    out[:, :2] = calibration.reading_features(recording.readings)[:, :2]
    for index, pair in enumerate(recording.split_pairs(config.min_range, config.open_beams)):
        if pair is not None:
            out[index, 2:] = pair
    return out


def choose(candidates, train, tiers_of, caution, allow=0):
    """The candidate with the best training score (calibration.objective, with up to ``allow``
    false alarms counted as none; ties: the smallest ``caution(candidate)``, the most
    cautious), with that score."""
    best = None
    for candidate in candidates:
        score = calibration.score_recordings(train, [tiers_of(candidate, i)
                                                     for i in range(len(train))])
        objective = calibration.objective(score)
        key = ((max(0, objective[0] - allow),) + tuple(objective[1:]), caution(candidate))
        if best is None or key < best[0]:
            best = (key, candidate, score)
    return best[1], best[2]


def cusum_caution(candidate):
    """Among equal scores prefer the higher threshold and drift, the lower clip, the shorter
    settle (the covariance ignored for as few readings as will do)."""
    clip, drift, threshold, settle = candidate
    return (-threshold, -drift, clip, settle)


def window_grid(config):
    """The shipped detector's config with every tier-parameter combination of the
    calibration's grid (its scan_check/through_lost kept)."""
    grid = calibration.Grid(through_lost=(config.through_lost,))
    return [dataclasses.replace(config, **params) for params in grid.combinations()]


def split_caution(config):
    """The calibration's own preference (calibration._caution) on a config."""
    return calibration._caution({k: getattr(config, k) for k in (
        'window_meta_tier2_lost', 'queue_min', 'window_meta_tier0_normal', 'prob_thresh',
        'ratio_thresh_detections_tier2_lost', 'settle_readings')})


def line(name, score):
    """One result line: silent >= 2 m within 15 s of driving, every delocalization, alarms."""
    silent, every = score['silent_ge2m'], score['delocalized']
    return ('%s: silent >= 2 m within 15 s of driving %d/%d, every delocalization %d/%d; false '
            'tier-2 alarms %d in %.2f h of normal driving + %d while settling'
            % (name, silent['within'], silent['events'], every['within'], every['events'],
               score['false_alarms'], score['normal_hours'], score['settle_false_alarms']))


def weighed_probabilities(train, held, weigh, config):
    """The training and held-out recordings weighed with ``weigh`` (two lists), and their
    readings' :func:`calibration.reading_probabilities` under ``config`` (the same shape)."""
    streams = [r.weighed(**weigh) for r in train], [r.weighed(**weigh) for r in held]
    return streams, [[calibration.reading_probabilities(
        calibration.reading_features(r.readings), config) for r in group] for group in streams]


def run(train_dirs, eval_dirs, variant, config_path, allow=0):
    """Choose the variant on the training runs, score it on the held-out ones; print both."""
    if allow < 0:
        raise ValueError('--allow %d: a number of training false alarms, >= 0' % allow)
    config = detectors.load_detector_config(config_path)
    train = [calibration.load_recording(path) for path in train_dirs]
    for recording in train:
        calibration.check_training(recording)
    held = [calibration.load_recording(path) for path in eval_dirs]
    weigh = dict(short_weight=config.short_weight, min_range=config.min_range,
                 open_beams=config.open_beams)
    if variant == 'cusum':
        streams = [r.weighed(**weigh) for r in train], [r.weighed(**weigh) for r in held]
        llrs = [[evidence(calibration.reading_probabilities(
            calibration.reading_features(r.readings), config), config.tier0_normal_prior)
            for r in group] for group in streams]
        grid = list(itertools.product(*CUSUM_GRID.values()))
        chosen, score = choose(grid, streams[0], lambda c, i: cusum_tiers(
            llrs[0][i], streams[0][i].resets, *c), cusum_caution, allow)
        print('chosen on training: clip %g, drift %g, threshold %g, settle %d' % chosen)
        tiers = [cusum_tiers(llr, r.resets, *chosen) for llr, r in zip(llrs[1], streams[1])]
    elif variant == 'burst':
        streams, probabilities = weighed_probabilities(train, held, weigh, config)
        grid = list(itertools.product(*BURST_GRID.values()))
        chosen, score = choose(grid, streams[0], lambda c, i: burst_tiers(
            probabilities[0][i], config, streams[0][i].resets, *c[0], c[1]), burst_caution,
            allow)
        print('chosen on training: %d of %d readings with a through share above %g'
              % (chosen[0] + (chosen[1],)))
        tiers = [burst_tiers(p, config, r.resets, *chosen[0], chosen[1])
                 for p, r in zip(probabilities[1], streams[1])]
    elif variant == 'span':
        streams, probabilities = weighed_probabilities(train, held, weigh, config)
        spans = [[recorded_spans(r, config) for r in group] for group in (train, held)]
        chosen, score, tiers = replayed(config, burst_config,
                                        list(itertools.product(*SPAN_GRID.values())),
                                        span_caution, streams, probabilities, spans, allow)
        print('chosen on training: %d of %d readings with a through share above %g and a '
              'span above %g m' % (chosen[0] + chosen[1:]))
    elif variant == 'sure':
        streams, probabilities = weighed_probabilities(train, held, weigh, config)
        spans = [[recorded_spans(r, config) if config.burst_count else None for r in group]
                 for group in (train, held)]
        chosen, score, tiers = replayed(config, sure_config,
                                        list(itertools.product(*SURE_GRID.values())),
                                        sure_caution, streams, probabilities, spans, allow)
        print('chosen on training: %d of the last %d readings with a scan above P(lost) %g'
              % (chosen[0] + (chosen[1],)))
    elif variant == 'window':
        streams, probabilities = weighed_probabilities(train, held, weigh, config)
        keys = ('prob_thresh', 'window_meta_tier2_lost', 'ratio_thresh_detections_tier2_lost',
                'queue_min', 'window_meta_tier0_normal', 'settle_readings')
        chosen, score = choose(window_grid(config), streams[0], lambda c, i:
                               calibration.replay_tiers(probabilities[0][i], c,
                                                        streams[0][i].resets),
                               split_caution, allow)
        print('chosen on training: %s' % ', '.join('%s %s' % (k, getattr(chosen, k))
                                                   for k in keys))
        tiers = [calibration.replay_tiers(p, chosen, r.resets)
                 for p, r in zip(probabilities[1], streams[1])]
    else:
        features = [[split_features(r, config) for r in group] for group in (train, held)]
        labels = np.concatenate([calibration.label_readings(r.errors, r.phases) for r in train])
        rows = np.vstack(features[0])
        known = (labels != calibration.AMBIGUOUS) & np.all(np.isfinite(rows[:, :2]), axis=1)
        model = SplitModel.fit(rows[known], labels[known])
        print('fitted: means %s, std %s, prior %.3f' % (
            np.round(model.mean, 4).tolist(), np.round(model.std, 4).tolist(),
            model.prior_normal))
        probabilities = [[model.probabilities(f) for f in group] for group in features]
        keys = list(SPLIT_GRID)
        grid = [dataclasses.replace(config, queue_min=QUEUE_MIN, **dict(zip(keys, values)))
                for values in itertools.product(*SPLIT_GRID.values())]
        chosen, score = choose(grid, train, lambda c, i: calibration.replay_tiers(
            probabilities[0][i], c, train[i].resets), split_caution, allow)
        print('chosen on training: %s' % ', '.join('%s %s' % (k, getattr(chosen, k))
                                                   for k in keys))
        streams = (train, held)
        tiers = [calibration.replay_tiers(p, chosen, r.resets)
                 for p, r in zip(probabilities[1], held)]
    print(line('training', score))
    for recording, recording_tiers in zip(streams[1], tiers):
        print(line('held out %s' % recording.label,
                   calibration.score_recordings([recording], [recording_tiers])))
    return 0


def main(argv=None):
    """Parse the command line and run; exit 1 with a message on bad input."""
    p = argparse.ArgumentParser(description='Try the window, cusum, split, burst, span or sure '
                                'variant of the lost detector offline on recorded detection '
                                'runs.')
    p.add_argument('train', nargs='+', metavar='TRAIN_DIR')
    p.add_argument('--evaluate', nargs='+', required=True, metavar='EVAL_DIR')
    p.add_argument('--variant', choices=('window', 'cusum', 'split', 'burst', 'span', 'sure'),
                   required=True)
    p.add_argument('--allow', type=int, default=0, metavar='N',
                   help='training false alarms the choice may take before they count '
                   '(default 0, the calibration\'s rule)')
    p.add_argument('--config', default=calibration.TARGET_PATH,
                   help='the YAML whose classifier and scan check to start from')
    args = p.parse_args(argv)
    try:
        return run(args.train, args.evaluate, args.variant, args.config, args.allow)
    except (ValueError, OSError) as error:
        print('detector_variants: %s' % error, file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
