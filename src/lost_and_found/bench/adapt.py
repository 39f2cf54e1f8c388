"""Adapt the lost detector's covariance model to a robot's own localizer.

The shipped ``config/lost_detector.yaml`` is fitted on the simulator, whose amcl stand-in
updates every 0.25 m on a dense scan: its *normal* class expects the x-y standard deviation
along the major axis around 0.11 m. Another localizer, or amcl with other particle counts,
odometry noise or a sparser laser, can be right with a cloud several times wider (the Carmen
logs' replays: a median of 0.64-0.78 m while the estimate is right, "Real logs" in
bench/RESULTS.md); the covariance features then read every reading as lost and the detector
sits in tier 2.

Fitting the whole model needs kidnaps and ground truth (``tools/calibrate_detector.py
--real-logs``). This needs neither: a recording of the robot driving *localized*, its amcl
poses only. The model it assumes is that the robot's localizer is the simulated one with its
standard deviations multiplied by one factor per feature, in every state: ``s_xy`` for the x-y
one, ``s_theta`` for the yaw one. Each factor is the median of the feature over the recording
divided by the mean of the YAML's normal class (a Gaussian's median), and the YAML's class
means and standard deviations of that feature (``slice_mu``, ``slice_sigma``, both classes)
are multiplied by it. For a Gaussian Naive Bayes classifier that is exactly the shipped
classifier applied to the robot's features divided by the factors: the scan feature, the
prior, the thresholds and the windows are left as they are (the scan feature compares the
laser with the map, not with the localizer).

The median, not the mean: a localizer that is wrong for a stretch of the recording widens its
cloud there, and the median moves less with that stretch than the mean does. It still moves:
a recording in which amcl had lost track for a third of the time gives a factor well above
the localized readings' own (on the Intel log, 9.7 against 5.9), which is why the tool prints
the factor of each third of the recording and warns when they differ.

Pure functions (readings in, numbers and text out), plus the readers of a bag and of a
``bench real-logs`` run; ``tools/adapt_detector.py`` is the command line.
"""
import math
import re
import textwrap

import numpy as np

from lost_and_found.bench import detectors
from lost_and_found.core.lost_detector import CovarianceError, covariance_features

#: Seconds skipped at the start of a recording by default: amcl converging from its initial
#: pose and spread (the real-logs suite's settle).
SETTLE = 30.0
#: Fewest readings (after the settle) the factors are taken from: amcl publishes after every
#: 0.25 m or 0.2 rad of motion, so 100 readings are a few minutes of driving.
MIN_READINGS = 100
#: The amcl topic read from a bag by default, and its message type.
TOPIC = '/amcl_pose'
POSE_TYPE = 'geometry_msgs/PoseWithCovarianceStamped'
#: Largest over smallest factor of the recording's thirds beyond which the tool warns.
SPREAD = 1.5
#: Significant digits of the scaled numbers written into the YAML.
DIGITS = 4
#: The YAML keys whose numbers are scaled, and the feature of each of their four entries.
SCALED_KEYS = ('slice_mu', 'slice_sigma')
_FEATURE_OF_ENTRY = (0, 1, 0, 1)


class AdaptError(ValueError):
    """Input the adaptation cannot use; the message names it."""


def features_of(readings):
    """``(features, refused)``: the covariance features (an (n, 2) array) of the readings the
    node would classify, and how many it would refuse (NaN, non-symmetric, ...), by kind.

    ``readings`` are ``(t, var_x, var_y, cov_xy, var_yaw, ...)`` tuples
    (:mod:`lost_and_found.bench.detectors`).
    """
    rows, refused = [], {}
    for reading in readings:
        try:
            rows.append(covariance_features(detectors.covariance_of(reading)))
        except CovarianceError as error:
            refused[error.kind] = refused.get(error.kind, 0) + 1
    return np.array(rows, dtype=float).reshape(-1, 2), refused


def after_settle(readings, settle=SETTLE):
    """The readings from ``settle`` seconds after the first one on."""
    if settle < 0 or not math.isfinite(settle):
        raise AdaptError('settle %r: must be a number of seconds >= 0' % (settle,))
    if not readings:
        return []
    start = readings[0][0] + settle
    return [r for r in readings if r[0] >= start]


def refused_text(refused):
    """``refused`` (kind -> count) in words, e.g. ``'3 not_finite, 1 not_symmetric'``."""
    return ', '.join('%d %s' % (n, kind) for kind, n in sorted(refused.items()))


def scale_factors(features, config, refused=None):
    """``(s_xy, s_theta)`` and the medians they come from, for ``config``'s normal class.

    ``refused`` (kind -> count of the recording's poses the node would refuse) only goes into
    the message when there are too few readings.

    Raises:
        AdaptError: fewer than :data:`MIN_READINGS` readings, a median of 0 (a localizer that
            publishes no covariance) or a normal-class mean of 0: nothing to scale by.
    """
    if len(features) < MIN_READINGS:
        raise AdaptError('%d usable amcl poses after the settle%s: need at least %d (a few '
                         'minutes of driving; amcl publishes only while the robot moves)'
                         % (len(features), ' (refused as the node would: %s)'
                            % refused_text(refused) if refused else '', MIN_READINGS))
    medians = tuple(float(m) for m in np.median(features, axis=0))
    normal = (float(config.slice_mu[0]), float(config.slice_mu[1]))
    for name, mean in zip(('xy', 'theta'), normal):
        if not mean > 0:
            raise AdaptError('the YAML\'s normal class has a %s mean of %r: nothing to scale'
                             % (name, mean))
    for name, median in zip(('sigma_xy', 'sigma_theta'), medians):
        if not median > 0:
            raise AdaptError('the median %s of the recording is %r: the localizer publishes '
                             'no covariance to scale by' % (name, median))
    return tuple(m / n for m, n in zip(medians, normal)), medians


def thirds(features, config):
    """The x-y factor of each third of the readings (in order), and whether they differ by
    more than :data:`SPREAD` (largest over smallest): a recording that was not localized
    throughout, or a localizer whose cloud changes from place to place, shows that way.

    The thirds are taken from what :func:`scale_factors` accepted, so each holds at least a
    third of :data:`MIN_READINGS`.
    """
    parts = np.array_split(np.asarray(features, dtype=float), 3)
    xy = [float(np.median(part[:, 0])) / float(config.slice_mu[0]) for part in parts]
    spread = max(xy) / min(xy) if min(xy) > 0 else math.inf
    return xy, spread > SPREAD


def round_sig(value, digits=DIGITS):
    """``value`` rounded to ``digits`` significant digits."""
    return float('%.*g' % (digits, value))


def scaled(values, factors):
    """The four ``slice_mu`` or ``slice_sigma`` numbers scaled by ``(s_xy, s_theta)``."""
    return [round_sig(float(v) * factors[_FEATURE_OF_ENTRY[i]]) for i, v in enumerate(values)]


def lost_share(features, config):
    """Share of the readings the covariance features alone label lost under ``config``."""
    from lost_and_found.core.lost_detector import build_classifier
    if not len(features):
        return float('nan')
    classifier = build_classifier(config)
    p_lost = classifier.predict_proba(features)[:, 1]
    return float(np.mean(p_lost > config.prob_thresh))


def render(source_text, config, factors, header):
    """The YAML ``source_text`` with its ``slice_mu`` and ``slice_sigma`` scaled by
    ``factors`` and ``header`` (paragraphs, each wrapped into comment lines at 100 columns)
    on top; every other line as in the source.

    Raises:
        AdaptError: the source does not hold each scaled key exactly once, on one line.
    """
    text = source_text
    for key in SCALED_KEYS:
        pattern = re.compile(r'^(\s*%s:\s*)\[[^\]\n]*\](.*)$' % key, re.MULTILINE)
        if len(pattern.findall(text)) != 1:
            raise AdaptError('the detector YAML must hold %s exactly once, as a one-line '
                             'list [a, b, c, d]' % key)
        numbers = ', '.join('%g' % v for v in scaled(getattr(config, key), factors))
        text = pattern.sub(lambda m: '%s[%s]%s' % (m.group(1), numbers, m.group(2)), text)
    lines = []
    for paragraph in header:
        lines += textwrap.wrap(paragraph, 98, initial_indent='# ', subsequent_indent='# ',
                               break_long_words=False, break_on_hyphens=False)
    return '\n'.join(lines) + '\n#\n' + text if lines else text


def readings_from_bag(path, topic=TOPIC):
    """``(readings, refused)``: the ``(t, var_x, var_y, cov_xy, var_yaw)`` readings of ``topic``
    in a bag, in order, and how many poses the node would refuse, by kind (the whole 6x6
    covariance is checked as the node checks it; those poses are left out).

    Raises:
        AdaptError: the bag cannot be read, has no such topic or the topic has another type.
    """
    import rosbag
    try:
        bag = rosbag.Bag(path)
    except (OSError, rosbag.ROSBagException) as error:
        raise AdaptError('%s: cannot read the bag (%s)' % (path, error)) from None
    with bag:
        topics = bag.get_type_and_topic_info().topics
        if topic not in topics:
            raise AdaptError('%s: no topic %s (it has %s): give --topic' % (
                path, topic, ', '.join(sorted(topics)) or 'none'))
        if topics[topic].msg_type != POSE_TYPE:
            raise AdaptError('%s: %s is %s, not %s' % (path, topic, topics[topic].msg_type,
                                                       POSE_TYPE))
        readings, refused = [], {}
        for _, msg, _ in bag.read_messages(topics=[topic]):
            try:
                covariance_features(msg.pose.covariance)
            except CovarianceError as error:
                refused[error.kind] = refused.get(error.kind, 0) + 1
                continue
            readings.append(detectors.reading_from_covariance(
                msg.header.stamp.to_sec(), msg.pose.covariance))
    readings.sort(key=lambda r: r[0])
    return readings, refused


def readings_from_real_logs(folder, log, profile):
    """The readings of a ``bench real-logs`` run's unmodified replay of ``log`` with the
    localizer ``profile``, from the replay's start (no ground truth is used).

    Raises:
        AdaptError: a missing or bad file, or no such replay.
    """
    import json
    import os
    path = os.path.join(folder, 'real_logs_stream.json')
    try:
        with open(path) as stream:
            data = json.load(stream)
        for st in data['streams']:
            if st.get('log') == log and st.get('profile') == profile and \
                    st.get('kind') == 'unmodified':
                field = {name: i for i, name in enumerate(st['fields'])}
                columns = [field[n] for n in ('t', 'var_x', 'var_y', 'cov_xy', 'var_yaw')]
                start = float(st['start'])
                return [tuple(float(row[i]) for i in columns) for row in st['readings']
                        if float(row[columns[0]]) >= start]
    except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
        raise AdaptError('%s: not a real-logs stream (%s: %s)' % (
            path, type(error).__name__, error)) from None
    raise AdaptError('%s: no unmodified replay of log %r with localizer profile %r'
                     % (path, log, profile))
