"""The ``compute`` suite: what each node's callback costs per message, and the simulator's
real-time factor as a function of the localizer's particle count.

Part A (callback cost). One run of the real graph (``sim.launch`` + ``lost_and_found.launch``
wired as ``demo.launch`` wires them, ``speed:=0``) drives the robot to random free poses and
lifts it once; ``rosbag record`` keeps every input the nodes subscribe to. The recorded
messages are then fed, in their recorded order and with the recorded sim time as the ROS
clock, to each node's own adapter class (``lost_and_found.nodes.*``) built around a fresh core,
in this process and without a master. The adapter's ROS handles are replaced by stand-ins
that do what rospy would do with the output (serialize a message when its topic had a
subscriber in the recorded graph) and nothing else. Each callback call is timed with
``time.perf_counter_ns`` (wall) and ``time.thread_time_ns`` (the thread's CPU time, which
leaves out preemption by other processes on a shared machine); the recording is replayed
(a fresh adapter and core per pass, after an untimed warm-up) until every main series has
enough samples. Deserializing each input
message (rospy does it once per message, in its receive thread) is timed separately.

Part B (real-time factor). For each particle count the same graph runs with a fixed-size
cloud (``min_particles`` = ``particles``) and ``speed:=0``; the robot drives to free poses
drawn from the seeded RNG, and sim seconds per wall second are measured over a fixed sim
duration after a warm-up, with each node's CPU time (``/proc/<pid>/stat``) and the lag of
``amcl_pose`` behind the scan it was computed from.

Each graph runs in a child process (``python3 -m lost_and_found.bench.compute SPEC RESULT``):
a process can be a rospy node of one master only, and every run gets a master of its own.
"""
import collections
import contextlib
import gc
import io
import json
import logging
import math
import os
import platform
import signal
import subprocess
import sys
import time

import yaml

from lost_and_found.bench import report

#: Particle counts of the real-time-factor sweep and of the particle filter's callback cost.
PARTICLE_COUNTS = (500, 1000, 2000, 5000)
#: The one particle count of ``--quick``.
QUICK_COUNTS = (500,)
#: Sim seconds recorded for Part A / measured per count in Part B (``--quick``: the second).
#: The RTF window is longer: at RTF ~10, 60 sim s would be a few wall seconds, too short to
#: average out other jobs on a shared machine.
RECORD_SIM_S = (60.0, 10.0)
RTF_SIM_S = (180.0, 10.0)
#: Sim seconds of driving before a window starts (after the first move_base feedback).
WARMUP_SIM_S = (5.0, 2.0)
#: Samples wanted per main series of Part A (``--quick``: the second).
SAMPLES = (1000, 5)
#: Most replays of the recording per harness, and their wall budget (s).
MAX_PASSES = (40, 1)
PASS_BUDGET_S = (60.0, 10.0)
#: Events replayed untimed before the timed passes (warm caches, imports, first-call paths).
WARMUP_EVENTS = 400
#: Goals drawn per graph run (driven in turn, cycling), and the least distance between two.
GOALS = 40
GOAL_SPACING = 3.0
#: The recording run lifts the robot once, at this fraction of its window, to >= 5 m away.
KIDNAP_AT = 0.4
KIDNAP_DISTANCE = 5.0
#: A graph run may take STARTUP_TIMEOUT wall s to come up, and its warm-up and window
#: (sim s) divided by MIN_RTF to run; beyond that it has failed.
MIN_RTF = 0.25
STARTUP_TIMEOUT = 120.0
#: How many particlecloud messages are built on their own, per particle count.
CLOUD_SAMPLES = 200
#: Sim seconds by which rosbag's clock may lag the bench's (each follows /clock on its own).
CLOCK_SLACK = 0.5
#: How long (sim s) sim_localizer waits for the odometry of a scan (its ODOM_TIMEOUT).
ODOM_WAIT = 0.1

#: Every topic the nodes of the two launch files subscribe to (what Part A replays).
RECORD_TOPICS = (
    '/scan', '/odom', '/tf', '/tf_static', '/amcl_pose', '/initialpose', '/cmd_vel',
    '/mobile_base/sensors/core', '/mobile_base/events/wheel_drop', '/fiducial_transforms',
    '/lost_detector/status', '/lost_detector/p_lost', '/lost_detector/reset',
    '/kidnap_monitor/picked_up',
    '/kidnap_monitor/kidnapped', '/kidnap_monitor/on_dock', '/lost_service/state',
    '/move_base/goal', '/move_base/cancel', '/move_base/result', '/move_base_simple/goal')

#: Latched topics: a node subscribing later still gets the last message, so a trimmed
#: recording keeps the last one before its start.
LATCHED_TOPICS = ('/tf_static', '/amcl_pose', '/lost_service/state', '/lost_detector/status',
                  '/kidnap_monitor/picked_up', '/kidnap_monitor/kidnapped',
                  '/kidnap_monitor/on_dock')

#: The nodes of the graph whose CPU time Part B reads (roscore's rosout included).
GRAPH_NODES = ('/sim_world', '/sim_localizer', '/sim_navigator', '/kidnap_monitor',
               '/lost_detector', '/lost_service', '/lost_and_found', '/fiducial_localizer',
               '/panorama_localizer', '/rosout')
#: The package's own nodes (the rest of GRAPH_NODES is the simulator and roscore).
PACKAGE_NODES = ('/kidnap_monitor', '/lost_detector', '/lost_service', '/lost_and_found',
                 '/fiducial_localizer', '/panorama_localizer')
#: Names of the bench's own subscribers in a graph run (not counted as the graph's).
CHILD_NODE = '/bench_compute'
RECORDER_NODE = '/bench_record'
#: actionlib_msgs/GoalStatus SUCCEEDED and ABORTED.
SUCCEEDED, ABORTED = 3, 4


class ComputeError(RuntimeError):
    """A graph run or a replay could not be done; the message says what and why."""


# ------------------------------------------------------------------ pure helpers

def pick(values, quick):
    """The full or the ``--quick`` value of a ``(full, quick)`` pair."""
    return values[1] if quick else values[0]


def cpu_model(cpuinfo_text):
    """The CPU model named in the text of /proc/cpuinfo ('unknown' when none is)."""
    for line in cpuinfo_text.splitlines():
        key, _, value = line.partition(':')
        if key.strip() in ('model name', 'Model', 'Processor') and value.strip():
            return value.strip()
    return 'unknown'


def machine_info():
    """CPU model and count, load averages and Python of this machine."""
    try:
        with open('/proc/cpuinfo') as stream:
            model = cpu_model(stream.read())
    except OSError:
        model = platform.processor() or 'unknown'
    return {'cpu_model': model, 'cpu_count': os.cpu_count(),
            'load_average': [round(v, 2) for v in os.getloadavg()],
            'python': platform.python_version(), 'platform': platform.platform()}


def cpu_seconds(stat_text, ticks_per_second):
    """User + system CPU seconds of a process from the text of its /proc/<pid>/stat.

    Raises:
        ValueError: when the text is not a stat line (names what is wrong).
    """
    end = stat_text.rfind(')')
    if end < 0:
        raise ValueError('not a /proc/<pid>/stat line: %r' % stat_text[:80])
    fields = stat_text[end + 2:].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15 (proc(5)).
    if len(fields) < 13:
        raise ValueError('/proc/<pid>/stat line has %d fields after the name, expected >= 13'
                         % len(fields))
    return (int(fields[11]) + int(fields[12])) / float(ticks_per_second)


def real_time_factor(sim0, sim1, wall0, wall1):
    """Sim seconds per wall second between two (sim, wall) readings.

    Raises:
        ValueError: a non-finite reading or a window that does not move forward.
    """
    values = (sim0, sim1, wall0, wall1)
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
        raise ValueError('real_time_factor needs finite readings, got %r' % (values,))
    if wall1 <= wall0 or sim1 < sim0:
        raise ValueError('window (sim %.3f -> %.3f, wall %.3f -> %.3f) does not move forward'
                         % values)
    return (sim1 - sim0) / (wall1 - wall0)


def should_send_goal(goal_active, robot_state, last_outcome=None):
    """Whether the driver sends its next goal (none of its own may be in flight).

    Yes when the robot is IDLE; also when it is still NAVIGATING after move_base aborted the
    driver's goal (the recovery node keeps the goal and the state then, as a symptom of being
    lost; a user would send a goal again). While the robot is LOST, FLYING, LOCALIZING or
    NAVIGATING a goal the package resumed, the package is in charge and a user would wait.

    Args:
        goal_active: the driver's own goal is in flight.
        robot_state: the latest /lost_service/state (a string, or None when unknown).
        last_outcome: actionlib_msgs/GoalStatus of the driver's last goal (None: none yet).
    """
    if goal_active:
        return False
    return robot_state == 'IDLE' or (robot_state == 'NAVIGATING' and last_outcome == ABORTED)


def us_stats(nanoseconds):
    """report.stats of durations given in ns, in microseconds."""
    return report.stats([v / 1000.0 for v in nanoseconds])


class Stopwatch:
    """Wall time and CPU time of calls, in ns, per named series.

    Wall time (``time.perf_counter_ns``) is what the figures are about; the CPU time of the
    calling thread (``time.thread_time_ns``, read outside the wall-time reads) is kept too:
    on a machine shared with other jobs it leaves out the time the thread was preempted.

    Attributes:
        samples: series name -> list of wall durations (ns).
        cpu_samples: series name -> list of thread CPU durations (ns), in the same order.
        enabled: when False (warm-up), calls run but are not recorded.
        last_ns: the wall duration of the latest call.
    """

    def __init__(self):
        """No samples yet; recording."""
        self.samples = collections.defaultdict(list)
        self.cpu_samples = collections.defaultdict(list)
        self.enabled = True
        self.last_ns = None
        self._last_cpu_ns = None

    def measure(self, series, function, *args):
        """Call ``function(*args)``, record its wall and CPU time under ``series``.

        Returns:
            What the function returned.
        """
        cpu = time.thread_time_ns()
        start = time.perf_counter_ns()
        result = function(*args)
        self.last_ns = time.perf_counter_ns() - start
        self._last_cpu_ns = time.thread_time_ns() - cpu
        self.add_last(series)
        return result

    def add_last(self, series):
        """Record the latest call under another series too (e.g. a subset of the calls)."""
        if self.enabled and self.last_ns is not None:
            self.samples[series].append(self.last_ns)
            self.cpu_samples[series].append(self._last_cpu_ns)


def timing_overhead_ns(calls=20000):
    """Median ns that Stopwatch.measure adds around a call that does nothing."""
    watch = Stopwatch()
    for _ in range(calls):
        watch.measure('noop', _noop)
    return report.percentile(watch.samples['noop'], 50)


def _noop():
    return None


def replay(events, handlers, clock, period=None, on_timer=None):
    """Feed recorded events, in order, to handlers; fire a timer every ``period`` of event time.

    Args:
        events: ``[(t, topic, msg)]`` sorted by ``t`` (sim s).
        handlers: topic -> ``callable(t, msg)``; other topics are skipped.
        clock: ``callable(t)`` that sets the replay's ROS clock before each call.
        period: timer period (sim s), or None for no timer. The first tick is one period
            after the first event (as a rospy.Timer started then).
        on_timer: ``callable(t)`` run at every tick.
    """
    next_tick = None
    for t, topic, msg in events:
        if period:
            if next_tick is None:
                next_tick = t + period
            while next_tick <= t:
                clock(next_tick)
                on_timer(next_tick)
                next_tick += period
        handler = handlers.get(topic)
        if handler is not None:
            clock(t)
            handler(t, msg)


def trim_events(events, start, end, latched=LATCHED_TOPICS):
    """The events from ``start`` to ``end`` (sim s), plus the last message of each latched
    topic before ``start``, moved to ``start`` (a node gets it when it subscribes). Every
    /tf_static message before ``start`` is kept: static transforms add up.

    Args:
        events: ``[(t, topic, msg)]`` sorted by ``t``.
    """
    last, static = {}, []
    for event in events:
        if event[0] < start and event[1] == '/tf_static':
            static.append(event)
        elif event[0] < start and event[1] in latched:
            last[event[1]] = event
    carried = static + sorted(last.values(), key=lambda e: e[0])
    return [(start, topic, msg) for _, topic, msg in carried] + \
        [e for e in events if start <= e[0] <= end]


def short_series(samples, primary, wanted):
    """The primary series that have some samples but fewer than ``wanted``.

    A series with no sample at all cannot grow by replaying again (the recording has no such
    input), so it does not keep the replay going.
    """
    return [name for name in primary if 0 < len(samples.get(name, ())) < wanted]


def free_goals(free, rng, start, count, spacing=GOAL_SPACING):
    """``count`` goals (x, y, yaw) in the free space, each ``spacing`` m or more from the last.

    Args:
        free: a :class:`lost_and_found.bench.places.FreeSpace`.
        rng: the seeded generator.
        start: (x, y) where the robot starts.
    """
    from lost_and_found.bench.places import PlacesError
    goals, here = [], tuple(start[:2])
    for _ in range(count):
        try:
            goal = free.sample(rng, near=here, min_distance=spacing)
        except PlacesError:      # a small map: any free pose will do
            goal = free.sample(rng)
        goals.append([round(v, 3) for v in goal])
        here = goal[:2]
    return goals


def launch_command(log_path):
    """The roslaunch command line a RosGraph launch log starts with ('' when unreadable)."""
    try:
        with open(log_path) as stream:
            first = stream.readline().strip()
    except OSError:
        return ''
    return first[2:] if first.startswith('$ ') else ''


def subscribed_topics(system_state, exclude=(CHILD_NODE, RECORDER_NODE)):
    """Topic -> whether a node other than ``exclude`` subscribes to it.

    Args:
        system_state: the master's getSystemState ``[publishers, subscribers, services]``.
    """
    subscribers = system_state[1]
    return {topic: any(node not in exclude for node in nodes) for topic, nodes in subscribers}


# ------------------------------------------------------------------ Markdown and plots

def callback_rows(results):
    """Table rows ``(node, series, stats_us, deserialize_us)`` of the Part A results."""
    rows = []
    for entry in results:
        for series in entry['order']:
            stats = entry['series'].get(series)
            if stats is None:
                continue
            rows.append((entry['node'], series, stats, entry['deserialize'].get(series)))
    return rows


def callbacks_markdown(results, overhead_ns):
    """The Part A table and what each row covers."""
    headers = ['node', 'callback', 'n', 'median µs', 'p99 µs', 'max µs', 'CPU median µs',
               'CPU p99 µs', 'deserialize µs (median)']
    rows = [[node, series, stats['n'], report.fmt(stats['median'], 1),
             report.fmt(stats['p99'], 1), report.fmt(stats['max'], 1),
             report.fmt(stats.get('cpu_median'), 1), report.fmt(stats.get('cpu_p99'), 1),
             report.fmt(deser, 1)]
            for node, series, stats, deser in callback_rows(results)]
    lines = [report.markdown_table(headers, rows), '']
    lines.append('median / p99 / max: wall time per call (time.perf_counter_ns); CPU: the '
                 'calling thread\'s CPU time per call (time.thread_time_ns), which leaves out '
                 'time the thread was preempted by other processes. '
                 'Timing overhead of one measured call: %s µs (median, not subtracted). '
                 'Deserializing is rospy turning the received bytes into the message, once '
                 'per message in its receive thread (not part of the callback).'
                 % report.fmt(None if overhead_ns is None else overhead_ns / 1000.0, 2))
    lines += ['', 'What each row covers:', '']
    printed = set()
    for entry in results:
        label = entry.get('covers_label') or entry['node']
        for series in entry['order']:
            text = entry['covers'].get(series)
            if text and series in entry['series'] and (label, series) not in printed:
                printed.add((label, series))
                lines.append('- **%s / %s**: %s' % (label, series, text))
    problems = [(entry['node'], entry['log']) for entry in results
                if entry['log'].get('warning') or entry['log'].get('error')]
    if problems:
        lines += ['', 'Log lines the adapters wrote during the replays (warning / error '
                  'count, first messages):', '']
        for node, log in problems:
            lines.append('- %s: %d / %d: %s' % (
                node, log.get('warning', 0), log.get('error', 0),
                ' | '.join(log.get('first', []))))
    return '\n'.join(lines)


def rtf_markdown(runs):
    """The Part B table and the command of each run."""
    headers = ['particles', 'RTF (sim s / wall s)', 'sim s', 'wall s', 'amcl_pose / sim s',
               'amcl_pose lag median / p95 (sim ms)', 'CPU s per sim s: sim_world',
               'sim_localizer', 'sim_navigator', 'package (5 nodes)',
               'CPU cores busy (graph)', 'goals sent / reached / aborted']
    rows = []
    for run in runs:
        if run.get('error'):
            rows.append([run['particles'], 'failed: %s' % run['error'][:80]] +
                        ['-'] * (len(headers) - 2))
            continue
        cpu = run.get('cpu_per_sim_s', {})
        package = sum(cpu.get(n, 0.0) for n in PACKAGE_NODES) if cpu else None
        lag = run.get('amcl_lag_sim_s') or {}
        rows.append([
            run['particles'], report.fmt(run['rtf'], 2), report.fmt(run['sim_s'], 1),
            report.fmt(run['wall_s'], 1), report.fmt(run.get('amcl_pose_per_sim_s'), 2),
            '%s / %s' % (report.fmt(_ms(lag.get('median')), 0), report.fmt(_ms(lag.get('p95')), 0)),
            report.fmt(cpu.get('/sim_world'), 3), report.fmt(cpu.get('/sim_localizer'), 3),
            report.fmt(cpu.get('/sim_navigator'), 3), report.fmt(package, 3),
            report.fmt(run.get('cores_busy'), 2),
            '%d / %d / %d' % (run.get('goals_sent', 0), run.get('goals_reached', 0),
                              run.get('goals_aborted', 0))])
    lines = [report.markdown_table(headers, rows), '']
    lines.append('RTF is sim seconds per wall second of the whole graph with `speed:=0` (the '
                 'simulator steps as fast as it can); CPU s per sim s is each process\'s user + '
                 'system CPU time over the window divided by the window\'s sim seconds; cores '
                 'busy is the graph\'s CPU seconds per wall second (bench excluded); the lag is '
                 'the sim time from a scan\'s stamp to its amcl_pose reaching the bench. '
                 'Goals are counted when they end inside the window; sim_navigator aborts a '
                 'goal when its pose (tf map -> base_footprint, kept fresh by sim_localizer) '
                 'is older than pose_timeout sim s, which at a high RTF is a short wall-time '
                 'stall of the localizer.')
    lines += ['', 'Commands (one private roscore per run):', '']
    for run in runs:
        for command in run.get('commands', []):
            lines.append('- %d particles: `%s`' % (run['particles'], command))
    return '\n'.join(lines)


def _ms(seconds):
    return None if seconds is None else 1000.0 * seconds


def rtf_plot(path, runs, localizer_costs):
    """RTF vs particles, and the localizer's per-update cost vs particles (log-log)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 4.0))
    ok = [r for r in runs if not r.get('error')]
    left.plot([r['particles'] for r in ok], [r['rtf'] for r in ok], 'o-')
    for r in ok:
        left.annotate('%.2f' % r['rtf'], (r['particles'], r['rtf']), textcoords='offset points',
                      xytext=(0, 6), ha='center', fontsize=8)
    left.axhline(1.0, color='grey', linestyle=':', linewidth=0.8)
    left.set_xscale('log')
    left.set_xlabel('particles (fixed cloud)')
    left.set_ylabel('real-time factor (sim s / wall s)')
    left.set_title('Simulator + package, speed:=0')
    left.grid(True, alpha=0.3)
    for label, key, style in (('wall median', 'median', 'o-'), ('wall p99', 'p99', 's--'),
                              ('CPU median', 'cpu_median', '^:')):
        points = sorted((n, s[key]) for n, s in localizer_costs.items() if s.get(key))
        if points:
            right.plot([p[0] for p in points], [p[1] / 1000.0 for p in points], style,
                       label=label)
    right.set_xscale('log')
    right.set_yscale('log')
    right.set_xlabel('particles')
    right.set_ylabel('ms per scan that updates the filter')
    right.set_title('sim_localizer scan callback')
    right.grid(True, alpha=0.3, which='both')
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def callbacks_plot(path, results):
    """Median (bar) and p99 (marker) of every Part A series, log scale."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    rows = [(node, series, stats) for node, series, stats, _ in callback_rows(results)
            if stats['n']]
    fig, ax = plt.subplots(figsize=(8.0, 0.28 * len(rows) + 1.2))
    ys = list(range(len(rows)))[::-1]
    ax.barh(ys, [s['median'] for _, _, s in rows], color='tab:blue', label='median')
    ax.plot([s['p99'] for _, _, s in rows], ys, 'k|', markersize=10, label='p99')
    ax.set_yticks(ys)
    ax.set_yticklabels(['%s: %s' % (n, s) for n, s, _ in rows], fontsize=7)
    ax.set_xscale('log')
    ax.set_xlabel('µs per call (wall time)')
    ax.set_title('Callback cost per message')
    ax.grid(True, axis='x', alpha=0.3, which='both')
    ax.legend(fontsize=8, loc='lower right')
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# ------------------------------------------------------------------ replay stand-ins (ROS I/O)

class NullPublisher:
    """A rospy.Publisher stand-in: serializes like rospy, sends nothing.

    rospy serializes a published message in the caller's thread only when the topic has a
    subscriber; so does this, when ``subscribed``.
    """

    def __init__(self, topic, subscribed=True):
        """Publish (in name) on ``topic``."""
        self.topic = topic
        self.subscribed = subscribed
        self.count = 0
        self._buff = io.BytesIO()
        self._seq = 0

    def publish(self, msg):
        """Serialize ``msg`` into a buffer when the topic has subscribers, as rospy does."""
        from rospy.msg import serialize_message
        self.count += 1
        if self.subscribed:
            self._seq += 1
            serialize_message(self._buff, self._seq, msg)
            self._buff.seek(0)
            self._buff.truncate(0)


class NullBroadcaster:
    """A tf2_ros.TransformBroadcaster stand-in (a TFMessage serialized on /tf)."""

    def __init__(self, subscribed=True):
        """Publish (in name) on /tf."""
        self._pub = NullPublisher('/tf', subscribed)

    def sendTransform(self, transform):  # noqa: N802 - tf2_ros's name
        """Wrap one or more TransformStamped in a TFMessage and serialize it."""
        from tf2_msgs.msg import TFMessage
        if not isinstance(transform, list):
            transform = [transform]
        self._pub.publish(TFMessage(transform))


class NullActionClient:
    """An actionlib.SimpleActionClient stand-in: goals and cancels are counted only."""

    def __init__(self):
        """Nothing sent yet."""
        self.sent = 0
        self.cancelled = 0

    def send_goal(self, goal, done_cb=None, active_cb=None, feedback_cb=None):
        """Count the goal (actionlib would serialize and send it)."""
        self.sent += 1

    def cancel_goal(self):
        """Count the cancel."""
        self.cancelled += 1

    def wait_for_server(self, timeout=None):
        """Always connected."""
        return True


class NullActionServer:
    """The part of actionlib.SimpleActionServer the navigator's control period uses."""

    def __init__(self, subscribed=True):
        """Feedback goes (in name) to move_base/feedback."""
        self._pub = NullPublisher('/move_base/feedback', subscribed)

    def publish_feedback(self, feedback):
        """Wrap the feedback as actionlib does and serialize it."""
        from move_base_msgs.msg import MoveBaseActionFeedback
        import rospy
        msg = MoveBaseActionFeedback(feedback=feedback)
        msg.header.stamp = rospy.Time.now()
        self._pub.publish(msg)


class NullWorker:
    """lost_service's ServiceWorker stand-in: amcl service calls are counted only."""

    def __init__(self):
        """No calls yet."""
        self.calls = collections.Counter()

    def call(self, name, announce=False):
        """Count a call of service ``name``."""
        self.calls[name] += 1


class StubStateClient:
    """lost_and_found.state.StateClient stand-in: holds the latest recorded state."""

    def __init__(self, state=None):
        """Start in ``state`` (a State or None)."""
        self.state = state


def _replay_buffer_class():
    """tf2_ros.Buffer for replays (built lazily: tf2_ros is imported only when needed)."""
    import rospy
    import tf2_ros

    class ReplayBuffer(tf2_ros.Buffer):
        """A tf buffer fed from a recording, that never waits.

        In a replay the clock stands still during a callback and nothing arrives meanwhile,
        so tf2_ros's polling wait for a missing transform would never end. This does the same
        calls as ``tf2_ros.Buffer.can_transform`` (two clock reads and the core checks) but
        gives up at once where tf2_ros would sleep; ``missed`` counts those cases (the node
        would have waited for the timeout and then warned).
        """

        def __init__(self, cache_time=None):
            """An empty buffer (no tf2_frames service: there is no master)."""
            super().__init__(cache_time, debug=False)
            self.missed = 0

        def can_transform(self, target_frame, source_frame, time,
                          timeout=rospy.Duration(0.0), return_debug_tuple=False):
            """tf2_ros's can_transform without the wait."""
            if timeout != rospy.Duration(0.0):
                start_time = rospy.Time.now()
                if rospy.Time.now() < start_time + timeout and \
                        not self.can_transform_core(target_frame, source_frame, time)[0]:
                    self.missed += 1
            core_result = self.can_transform_core(target_frame, source_frame, time)
            return core_result if return_debug_tuple else core_result[0]

        def feed(self, msg, static=False):
            """Add every transform of a tf2_msgs/TFMessage."""
            for transform in msg.transforms:
                if static:
                    self.set_transform_static(transform, 'bench')
                else:
                    self.set_transform(transform, 'bench')

    return ReplayBuffer


def install(obj, **attributes):
    """Replace an adapter's ROS handles with replay stand-ins.

    Each name must still be used by the adapter's class (``self.<name>`` in its source), so
    a renamed handle fails here, loudly, instead of leaving a real ROS call in a replay.

    Raises:
        ComputeError: naming the class and the attribute it no longer uses.
    """
    import inspect
    source = inspect.getsource(type(obj))
    for name, value in attributes.items():
        if 'self.%s' % name not in source:
            raise ComputeError('%s no longer uses self.%s: update lost_and_found.bench.compute'
                               % (type(obj).__name__, name))
        setattr(obj, name, value)


class LogCounter(logging.Handler):
    """Counts the log records (per level) the adapters and cores write during a replay."""

    def __init__(self, keep=3):
        """Keep the text of the first ``keep`` warnings or errors."""
        super().__init__(logging.DEBUG)
        self.counts = collections.Counter()
        self.first = []
        self._keep = keep

    def emit(self, record):
        """Count it; keep the first few warnings and errors."""
        level = 'error' if record.levelno >= logging.ERROR else \
            'warning' if record.levelno >= logging.WARNING else 'info'
        self.counts[level] += 1
        if level != 'info' and len(self.first) < self._keep:
            try:
                self.first.append(record.getMessage()[:160])
            except (TypeError, ValueError):
                self.first.append(str(record.msg)[:160])


@contextlib.contextmanager
def replay_environment():
    """rospy time set by the replay (like /clock) and the 'rosout' log counted, not printed.

    Yields:
        ``(clock, counter)``: ``clock(t)`` sets the ROS time to ``t`` sim seconds.
    """
    import rospy.rostime as rostime
    was_initialized = rostime.is_rostime_initialized()
    rostime.set_rostime_initialized(True)
    logger = logging.getLogger('rosout')
    counter = LogCounter()
    saved = (logger.handlers[:], logger.propagate, logger.level)
    logger.handlers, logger.propagate = [counter], False
    logger.setLevel(logging.INFO)

    def clock(t):
        # What rospy's own /clock subscriber does with each message.
        rostime._set_rostime(rostime.Time.from_sec(t))
    try:
        yield clock, counter
    finally:
        logger.handlers, logger.propagate = saved[0], saved[1]
        logger.setLevel(saved[2])
        rostime._rostime_current = None
        rostime.set_rostime_initialized(was_initialized)


@contextlib.contextmanager
def frozen_heap():
    """Keep the objects alive now (the recording: ~10^5 messages) out of garbage collection.

    A full collection walks every tracked object; in a node that is its own small heap, here
    it would also be every recorded message, and a callback that happens to trigger one would
    be charged tens of milliseconds the node never pays. Objects made inside are collected as
    usual.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


# ------------------------------------------------------------------ the recording

class Recording:
    """What Part A replays: the recorded messages and the graph's parameters.

    Attributes:
        events: ``[(t, topic, msg)]`` in recorded order (t = sim s at recording).
        params: the parameter server of the recorded graph (the master's getParam('/')).
        subscribed: topic -> whether it had a subscriber in the graph (bench excluded).
        deserialize_ns: topic -> ns per message of rospy's deserialization.
        duration: sim seconds from the first to the last event.
    """

    def __init__(self, events, params, subscribed, deserialize_ns):
        """Keep the parts."""
        self.events = events
        self.params = params
        self.subscribed = subscribed
        self.deserialize_ns = deserialize_ns
        self.duration = events[-1][0] - events[0][0] if events else 0.0

    def trimmed(self, start, end):
        """A copy holding only the events from ``start`` to ``end`` (see trim_events)."""
        return Recording(trim_events(self.events, start, end), self.params, self.subscribed,
                         self.deserialize_ns)

    def node_params(self, node):
        """The private parameters of ``node`` (a dict; empty when it had none)."""
        return dict(self.params.get(node.strip('/'), {}) or {})

    def is_subscribed(self, topic):
        """Whether ``topic`` had a subscriber (unknown topics count as subscribed)."""
        return self.subscribed.get(topic, True)

    def topic_counts(self):
        """topic -> number of recorded messages."""
        return collections.Counter(topic for _, topic, _ in self.events)


def load_recording(bag_path, params, subscribed):
    """Read a bag into a :class:`Recording`, deserializing each message as rospy would.

    Messages are built from this workspace's message classes (the ones the nodes import);
    each gets the connection header (``callerid``) rospy attaches to received messages.

    Raises:
        ComputeError: a missing or empty bag, or a message whose definition changed.
    """
    import rosbag
    import roslib.message
    if not os.path.isfile(bag_path):
        raise ComputeError('no recording at %s' % bag_path)
    events, deserialize_ns, classes = [], collections.defaultdict(list), {}
    with rosbag.Bag(bag_path) as bag:
        for topic, raw, stamp, header in bag.read_messages(raw=True,
                                                           return_connection_header=True):
            datatype, data, md5sum = raw[0], raw[1], raw[2]
            cls = classes.get(datatype)
            if cls is None:
                cls = roslib.message.get_message_class(datatype)
                if cls is None or cls._md5sum != md5sum:
                    raise ComputeError('%s on %s: no message class with the recorded '
                                       'definition' % (datatype, topic))
                classes[datatype] = cls
            start = time.perf_counter_ns()
            msg = cls().deserialize(data)
            deserialize_ns[topic].append(time.perf_counter_ns() - start)
            msg._connection_header = header
            events.append((stamp.to_sec(), topic, msg))
    if not events:
        raise ComputeError('the recording %s holds no message' % bag_path)
    # /tf_static is latched: sent once at start-up, valid from the first message on, though
    # rosbag may receive it after other messages.
    first = min(e[0] for e in events)
    events = [(first if topic == '/tf_static' else t, topic, msg) for t, topic, msg in events]
    events.sort(key=lambda e: (e[0], e[1] != '/tf_static'))   # stable: keeps the bag's order
    return Recording(events, params, subscribed, dict(deserialize_ns))


def _config(cls, params):
    """A node's validated config from its parameters (unknown keys are ignored)."""
    from lost_and_found.core.config import config_from_params
    return config_from_params(cls, params, warn=lambda _text: None)


# ------------------------------------------------------------------ harnesses (one per node)

class ScanHold:
    """Scans held back until a replay's tf has the odometry at their stamp.

    A node looks up odom -> base at a scan's stamp and waits (up to its tf timeout, about
    0.1 s) for it; rosbag may have recorded the scan before that tf. A scan goes to ``handle``
    once the buffer has the transform, or once the replayed tf is :data:`ODOM_WAIT` s past its
    stamp (the node would have given up by then); scans keep their order.

    Args:
        buffer: the replay's tf buffer, fed by :meth:`on_tf`.
        odom_frame, base_frame: the transform waited for.
        handle: ``callable(msg)`` for each scan let through.
        skip: ``callable(transform)``: True for a recorded transform not to feed (None: all).
    """

    def __init__(self, buffer, odom_frame, base_frame, handle, skip=None):
        """Nothing held yet."""
        self.buffer, self.frames, self.handle, self.skip = buffer, (odom_frame, base_frame), \
            handle, skip
        self.pending = []

    def _ready(self, stamp):
        return self.buffer.can_transform_core(self.frames[0], self.frames[1], stamp)[0]

    def on_tf(self, t, msg):
        """A recorded /tf message: feed it, then let through the scans it completes."""
        for transform in msg.transforms:
            if self.skip is None or not self.skip(transform):
                self.buffer.set_transform(transform, 'bench')
        while self.pending and (self._ready(self.pending[0].header.stamp) or
                                t - self.pending[0].header.stamp.to_sec() > ODOM_WAIT):
            self.handle(self.pending.pop(0))

    def on_scan(self, t, msg):
        """A recorded scan: handled now, or held behind earlier ones or its odometry."""
        if self.pending or not self._ready(msg.header.stamp):
            self.pending.append(msg)
        else:
            self.handle(msg)


class Harness:
    """One node's callbacks fed from a :class:`Recording`.

    A subclass builds a fresh adapter and core in :meth:`reset` and names the callbacks of
    each recorded topic in :meth:`handlers`; the generic :meth:`run_pass` replays the events
    and fires the node's timer.

    Attributes:
        node: the node's name in the tables.
        primary: series that must reach the wanted sample count.
        order: series in table order.
        covers: series -> what exactly the figure covers.
        covers_label: the node's name in the list of what rows cover (None: ``node``).
        inputs: series -> the recorded topic its messages come from (for deserialization).
    """

    node = ''
    primary = ()
    order = ()
    covers = {}
    covers_label = None
    inputs = {}
    period = None

    def __init__(self, recording):
        """Keep the recording; nothing is built until :meth:`reset`."""
        self.recording = recording

    def pub(self, topic):
        """A NullPublisher for ``topic`` that serializes when the graph had a subscriber."""
        return NullPublisher(topic, self.recording.is_subscribed(topic))

    def reset(self):
        """Build a fresh adapter and core."""
        raise NotImplementedError

    def map_msg(self, frame):
        """The map the recorded graph's sim_localizer published on /map (as map_server
        would), as a nav_msgs/OccupancyGrid in ``frame``."""
        import rospy
        from lost_and_found.nodes.sim_localizer import occupancy_grid_msg
        from lost_and_found.sim.gridmap import load_map
        from lost_and_found.sim.particle_filter import SimLocalizerConfig
        map_file = _config(SimLocalizerConfig,
                           self.recording.node_params('sim_localizer')).map_file
        return occupancy_grid_msg(load_map(map_file), frame, rospy.Time(0))

    def handlers(self, watch):
        """topic -> ``callable(t, msg)`` (timed where the node's callback runs)."""
        raise NotImplementedError

    def on_timer(self, t, watch):
        """The node's timer callback at ``t`` (nodes without a timer: nothing)."""

    def run_pass(self, events, watch, clock):
        """Replay ``events`` once through the current adapter."""
        replay(events, self.handlers(watch), clock, self.period,
               lambda t: self.on_timer(t, watch))


def _state_of(msg):
    from lost_and_found.state import parse_state
    return parse_state(msg.data)


class KidnapMonitorHarness(Harness):
    """kidnap_monitor: KidnapTrackerNode around a KidnapTracker."""

    node = 'kidnap_monitor'
    primary = ('mobile_base/sensors/core', 'timer')
    order = ('mobile_base/sensors/core', 'mobile_base/events/wheel_drop', 'timer')
    inputs = {'mobile_base/sensors/core': '/mobile_base/sensors/core',
              'mobile_base/events/wheel_drop': '/mobile_base/events/wheel_drop'}
    covers = {
        'mobile_base/sensors/core': 'KidnapTrackerNode._on_sensor_state: stamp_seconds, the '
        'lock, KidnapTracker.on_sensor_state, edge logging, publishing changed flags '
        '(std_msgs/Bool, serialized when subscribed).',
        'mobile_base/events/wheel_drop': 'KidnapTrackerNode._on_wheel_drop: '
        'KidnapTracker.on_wheel + the same logging and publishing.',
        'timer': 'KidnapTrackerNode._on_timer at ~rate: KidnapTracker.tick + publishing.',
    }

    def reset(self):
        """A fresh KidnapTrackerNode with null publishers."""
        from lost_and_found.core.kidnap import KidnapConfig, KidnapTracker
        from lost_and_found.nodes.kidnap_monitor import KidnapTrackerNode
        config = _config(KidnapConfig, self.recording.node_params('kidnap_monitor'))
        self.period = 1.0 / config.rate
        self.adapter = KidnapTrackerNode(KidnapTracker(config), config)
        install(self.adapter, _pubs={name: self.pub('/kidnap_monitor/' + name)
                                     for name in ('picked_up', 'kidnapped', 'on_dock')})
        self.adapter._publish_changes(force=True)     # what start() publishes first

    def handlers(self, watch):
        """SensorState, WheelDropEvent and the robot state."""
        node = self.adapter
        return {
            '/mobile_base/sensors/core': lambda t, m: watch.measure(
                'mobile_base/sensors/core', node._on_sensor_state, m),
            '/mobile_base/events/wheel_drop': lambda t, m: watch.measure(
                'mobile_base/events/wheel_drop', node._on_wheel_drop, m),
            '/lost_service/state': lambda t, m: node._on_state(_state_of(m)),
        }

    def on_timer(self, t, watch):
        """The tracker's timer."""
        watch.measure('timer', self.adapter._on_timer, None)


class LostDetectorHarness(Harness):
    """lost_detector: LostDetectorNode around a LostDetector with the graph's config, fed the
    recorded amcl poses, scans and tf, and the map sim_localizer published (as map_server
    would). With rule 9 on, after each callback that asked for strip verdicts, the whole-map
    search that a low score at the estimate would start is run on each of those strips and
    timed on its own."""

    node = 'lost_detector'
    pose_series, scan_series = 'amcl_pose', 'scan'
    search_series = 'strip search (whole map, after every verdict)'
    primary = (pose_series,)
    order = (pose_series, scan_series, search_series)
    inputs = {pose_series: '/amcl_pose', scan_series: '/scan'}
    covers = {
        pose_series: 'LostDetectorNode.on_pose: pose_features (covariance checks: length, '
        'finite, symmetric, PSD x-y block, eigenvalues) + stamp_order + the lock + with the '
        'scan check the pose\'s scan placed at the pose and each beam traced through the '
        'distance map (through and short misses, the through span of the burst rule) + with '
        'rule 9 the strip (tf lookup odom <- base at the scan stamp, its returns kept, the '
        'strip of the last strip_check/window s scored at the estimate and, within the slack, '
        'around it; the whole-map search only when that score is low, rare on this recording '
        'of a localized robot: the row "strip search" times it on every strip, and a sample '
        'here that ran one counts it in both rows) + LostDetector.update '
        '(GaussianNB.predict_proba via scikit-learn, the queue and the tier rules) + '
        'publishing ~status (std_msgs/String) and ~p_lost (std_msgs/Float64) + edge '
        'logging. When the scan comes after its pose, the '
        'classification runs in the scan\'s callback (next row) instead.',
        scan_series: 'LostDetectorNode.on_scan: the laser mount (tf, once), scan_from_msg, the '
        'scan kept for the pose amcl computes from it (and, when that pose came first, its '
        'classification as in the row above).',
        search_series: 'StripCheck.measure\'s whole-map search (PanoramaMatcher.match of the '
        'strip: the FFT correlation over the map at every second heading, then the fine search '
        'around the candidates), run after each callback above that asked for a strip verdict, '
        'as if every estimate had scored low (strips with fewer than strip_check/min_points '
        'returns within the search\'s max_range left out: it would return at once); the node '
        'runs it in that callback, under its lock, whenever the estimate (the best within the '
        'slack) scores below strip_check/ratio. Run right after the timed callback, it may '
        'leave the next callback\'s caches colder than the live node\'s are.',
    }

    def configure(self, config):
        """The config to run (the graph's)."""
        return config

    def reset(self):
        """A fresh LostDetectorNode with null ~status and ~p_lost publishers, a replay tf
        buffer and the recorded map; the strip's verdicts (rule 9 on) note what they were
        asked (an append inside the timed callback) for the searches :meth:`timed` runs."""
        import rospy
        from lost_and_found.core.lost_detector import LostDetector, LostDetectorConfig
        from lost_and_found.nodes.lost_detector import LostDetectorNode
        config = self.configure(
            _config(LostDetectorConfig, self.recording.node_params('lost_detector')))
        node = LostDetectorNode(LostDetector(config), config)
        install(node, _status_pub=self.pub('/lost_detector/status'),
                _p_lost_pub=self.pub('/lost_detector/p_lost'))
        self.buffer = _replay_buffer_class()(rospy.Duration(30.0))
        self._asked = []
        if node._checker is not None:
            install(node, _tf_buffer=self.buffer)
            install(node._mounts, tf_buffer=self.buffer)
            if not hasattr(self, '_built'):
                # Once per harness (untimed): the distance map and the strip's search, as
                # the node builds them from /map. A map it refuses leaves them None (logged).
                node.on_map(self.map_msg('map'))
                self._built = (node._checker.distance_map,
                               node._strip.matcher if node._strip is not None else None)
            node._checker.distance_map = self._built[0]
        if node._strip is not None:
            node._strip.matcher = self._built[1]
            verdict = node._strip.verdict

            def noted(stamp, odom, estimate):
                self._asked.append((stamp, odom))
                return verdict(stamp, odom, estimate)
            node._strip.verdict = noted
        self.adapter = node

    def handlers(self, watch):
        """amcl_pose and ~reset; with the scan check (the node subscribes to them only
        then) scan, tf and tf_static."""
        node = self.adapter
        handlers = {
            '/amcl_pose': lambda t, m: self.timed(watch, self.pose_series, node.on_pose, m),
            '/lost_detector/reset': lambda t, m: node.on_reset(m)}
        if node._checker is not None:
            handlers.update({
                '/scan': lambda t, m: self.timed(watch, self.scan_series, node.on_scan, m),
                '/tf': lambda t, m: self.buffer.feed(m),
                '/tf_static': lambda t, m: self.buffer.feed(m, static=True)})
        return handlers

    def timed(self, watch, series, callback, msg):
        """The callback, timed; then a timed whole-map search of each strip it asked a
        verdict of (with a map to search, and at least min_points returns within the
        search's max_range: with fewer the search returns at once)."""
        watch.measure(series, callback, msg)
        strip, asked, self._asked = self.adapter._strip, self._asked, []
        if strip is None or strip.matcher is None:
            return
        for stamp, odom in asked:
            points = strip.strip(stamp, odom)
            if len(strip.matcher.usable(points)) >= strip.min_points:
                watch.measure(self.search_series, strip.matcher.match, points)


class LostDetectorNoStripHarness(LostDetectorHarness):
    """lost_detector as in :class:`LostDetectorHarness` with rule 9 off (what the strip
    costs is the difference of the two harnesses' rows)."""

    pose_series, scan_series = 'amcl_pose (rule 9 off)', 'scan (rule 9 off)'
    primary = (pose_series,)
    order = (pose_series, scan_series)
    inputs = {pose_series: '/amcl_pose', scan_series: '/scan'}
    covers = {
        pose_series: 'LostDetectorNode.on_pose as in the row "amcl_pose", with '
        'strip_check/count 0 (no strip kept, scored or searched).',
        scan_series: 'LostDetectorNode.on_scan as in the row "scan", with rule 9 off.',
    }

    def configure(self, config):
        """The graph's config with rule 9 off."""
        import dataclasses
        return dataclasses.replace(config, strip_count=0)


class LostServiceHarness(Harness):
    """lost_service: LostServiceNode around a LostService."""

    node = 'lost_service'
    primary = ('amcl_pose', 'lost_detector/status', 'timer')
    order = ('amcl_pose', 'lost_detector/status', 'lost_detector/p_lost', 'kidnap_monitor flags',
             'initialpose', 'timer')
    inputs = {'amcl_pose': '/amcl_pose', 'lost_detector/status': '/lost_detector/status',
              'lost_detector/p_lost': '/lost_detector/p_lost',
              'kidnap_monitor flags': '/kidnap_monitor/picked_up',
              'initialpose': '/initialpose'}
    covers = {
        'amcl_pose': 'LostServiceNode._on_pose: finite checks, yaw_from_quaternion, '
        'covariance_features, LostService.on_pose + status() and publishing what changed '
        '(LocalizationStatus, state, last_good_pose).',
        'lost_detector/status': 'LostServiceNode._on_detector: LostService.on_detector_status '
        '+ the actions it asks for (re-seed message, detector reset, amcl service calls '
        'queued) + status publishing.',
        'lost_detector/p_lost': 'LostServiceNode._on_p_lost: LostService.on_detector_p_lost '
        '(a range check and the tight-pose count) + status publishing.',
        'kidnap_monitor flags': 'LostServiceNode._on_bool for picked_up / kidnapped / on_dock '
        '(the core handler + actions + status publishing).',
        'initialpose': 'LostServiceNode._on_initialpose (pose fixes from other nodes).',
        'timer': 'LostServiceNode._on_timer at 10 Hz: LostService.tick + actions + status.',
    }
    period = 0.1

    def reset(self):
        """A fresh LostServiceNode with null publishers and a null service worker."""
        from lost_and_found.core.lost_service import LostService, LostServiceConfig
        from lost_and_found.nodes.lost_service import LostServiceNode
        config = _config(LostServiceConfig, self.recording.node_params('lost_service'))
        node = LostServiceNode(LostService(config), config)
        install(node, _status_pub=self.pub('/lost_service/status'),
                _state_pub=self.pub('/lost_service/state'),
                _initialpose_pub=self.pub('/initialpose'),
                _reset_pub=self.pub('/lost_detector/reset'),
                _pose_pub=self.pub('/lost_service/last_good_pose'), _worker=NullWorker())
        node._publish_status()        # what start() publishes first
        self.adapter = node

    def handlers(self, watch):
        """The detector status, the kidnap flags, amcl_pose and initialpose."""
        node = self.adapter
        flags = {'/kidnap_monitor/picked_up': node.core.on_picked_up,
                 '/kidnap_monitor/kidnapped': node.core.on_kidnapped,
                 '/kidnap_monitor/on_dock': node.core.on_dock}
        out = {
            '/amcl_pose': lambda t, m: watch.measure('amcl_pose', node._on_pose, m),
            '/lost_detector/status': lambda t, m: watch.measure(
                'lost_detector/status', node._on_detector, m),
            '/lost_detector/p_lost': lambda t, m: watch.measure(
                'lost_detector/p_lost', node._on_p_lost, m),
            '/initialpose': lambda t, m: watch.measure('initialpose', node._on_initialpose, m),
        }
        for topic, handler in flags.items():
            out[topic] = (lambda h: lambda t, m: watch.measure(
                'kidnap_monitor flags', node._on_bool, m, h))(handler)
        return out

    def on_timer(self, t, watch):
        """The 10 Hz tick."""
        watch.measure('timer', self.adapter._on_timer, None)


class RecoveryHarness(Harness):
    """lost_and_found (recovery): RecoveryNode around a RecoveryCore, fed as recorded."""

    node = 'lost_and_found'
    primary = ('amcl_pose', 'scan', 'timer')
    order = ('amcl_pose', 'scan', 'odom', 'move_base/goal', 'move_base/result', 'state',
             'timer')
    inputs = {'amcl_pose': '/amcl_pose', 'scan': '/scan', 'odom': '/odom',
              'move_base/goal': '/move_base/goal', 'move_base/result': '/move_base/result',
              'state': '/lost_service/state'}
    covers = {
        'amcl_pose': 'RecoveryNode._on_pose: yaw_from_quaternion + RecoveryCore.on_pose under '
        'the lock + the saved-goal check.',
        'scan': 'RecoveryNode._on_scan: scan_from_msg (the ranges copied into a tuple) + '
        'RecoveryCore.on_scan.',
        'odom': 'RecoveryNode._on_odom: RecoveryCore.on_odom (position and frame, for the '
        'spiral\'s anchor and the wander\'s stall check) under the lock + the saved-goal check.',
        'move_base/goal': 'RecoveryNode._on_action_goal: user_goal_from_pose + '
        'RecoveryCore.on_user_goal (its own goals skipped by caller id).',
        'move_base/result': 'RecoveryNode._on_result: RecoveryCore.on_goal_done.',
        'state': 'RecoveryNode._on_state (from StateClient): parse_state + '
        'RecoveryCore.on_state.',
        'timer': 'RecoveryNode._on_timer at ~rate (control step): RecoveryCore.step + '
        '_execute (twist message, goal messages built; action client counted only) + '
        'saved-goal publishing, in the states of the recorded run.',
    }

    strategy = None

    def reset(self):
        """A fresh RecoveryNode with null publishers and a null action client."""
        from lost_and_found.core.recovery import RecoveryConfig, RecoveryCore
        from lost_and_found.nodes.lost_and_found import RecoveryNode
        params = self.recording.node_params('lost_and_found')
        if self.strategy:
            params['strategy'] = self.strategy
        config = _config(RecoveryConfig, params)
        self.period = 1.0 / config.rate
        node = RecoveryNode(RecoveryCore(config), config)
        install(node, _cmd_pub=self.pub('/cmd_vel'),
                _saved_pub=self.pub('/lost_and_found/saved_goal'),
                _cancel_pub=self.pub('/move_base/cancel'), _client=NullActionClient(),
                _name='/lost_and_found')
        self.adapter = node

    def handlers(self, watch):
        """State, amcl_pose, scan and the move_base topics."""
        node = self.adapter
        return {
            '/lost_service/state': lambda t, m: watch.measure(
                'state', lambda: node._on_state(_state_of(m))),
            '/amcl_pose': lambda t, m: watch.measure('amcl_pose', node._on_pose, m),
            '/scan': lambda t, m: watch.measure('scan', node._on_scan, m),
            '/odom': lambda t, m: watch.measure('odom', node._on_odom, m),
            '/move_base_simple/goal': lambda t, m: watch.measure(
                'move_base_simple/goal', node._on_simple_goal, m),
            '/move_base/goal': lambda t, m: watch.measure('move_base/goal',
                                                          node._on_action_goal, m),
            '/move_base/result': lambda t, m: watch.measure('move_base/result',
                                                            node._on_result, m),
        }

    def on_timer(self, t, watch):
        """The control step."""
        watch.measure('timer', self.adapter._on_timer, None)


class WanderHarness(RecoveryHarness):
    """lost_and_found searching with the reactive strategy: the recorded scans, state LOST."""

    node = 'lost_and_found'
    primary = ('timer while wandering (reactive)',)
    order = ('timer while wandering (reactive)', 'timer while spinning')
    inputs = {}
    covers = {
        'timer while wandering (reactive)': 'RecoveryNode._on_timer with strategy reactive in '
        'phase WANDER: RecoveryCore.step runs ReactiveWander on the latest recorded scan + the '
        'twist message. The robot state is forced to LOST at the start of each pass; the '
        'recorded scans, poses and odometry are fed as they came.',
        'timer while spinning': 'RecoveryNode._on_timer in phase SPIN (the open-loop spin '
        'that starts each search).',
    }
    strategy = 'reactive'

    def handlers(self, watch):
        """Scans, poses and odometry only (the state is imposed)."""
        node = self.adapter
        return {'/amcl_pose': lambda t, m: node._on_pose(m),
                '/scan': lambda t, m: node._on_scan(m),
                '/odom': lambda t, m: node._on_odom(m)}

    def run_pass(self, events, watch, clock):
        """Impose LOST at the first event, then replay."""
        from lost_and_found.state import State
        if events:
            clock(events[0][0])
            self.adapter._on_state(State.LOST)
        super().run_pass(events, watch, clock)

    def on_timer(self, t, watch):
        """The control step, filed by the phase it ran in."""
        from lost_and_found.core.recovery import Phase
        phase = self.adapter._core.phase
        name = {Phase.WANDER: 'timer while wandering (reactive)',
                Phase.SPIN: 'timer while spinning'}.get(phase, 'timer (%s)' % phase.value)
        watch.measure(name, self.adapter._on_timer, None)


class FiducialHarness(Harness):
    """fiducial_localizer: FiducialLocalizerNode, fed as recorded (state from the run)."""

    node = 'fiducial_localizer'
    primary = ('fiducial_transforms',)
    order = ('fiducial_transforms',)
    inputs = {'fiducial_transforms': '/fiducial_transforms'}
    covers = {
        'fiducial_transforms': 'FiducialLocalizerNode._on_fiducials in the recorded robot '
        'states: outside LOST/LOCALIZING (most of the time) the publish gate closes it right '
        'after the empty-message check.',
    }
    gate_open = False

    def reset(self):
        """A fresh node with a replay tf buffer and a stub state client."""
        from lost_and_found.core.fiducial import (FiducialLocalizer, FiducialLocalizerConfig,
                                                  load_fiducial_map)
        from lost_and_found.nodes.fiducial_localizer import FiducialLocalizerNode
        from lost_and_found.state import State
        config = _config(FiducialLocalizerConfig,
                         self.recording.node_params('fiducial_localizer'))
        fiducial_map = load_fiducial_map(config.fiducial_map)
        node = FiducialLocalizerNode(FiducialLocalizer(config, fiducial_map), config,
                                     fiducial_map.frame_id)
        self.buffer = _replay_buffer_class()()
        self.states = StubStateClient(State.LOST if self.gate_open else None)
        install(node, _tf_buffer=self.buffer, _state_client=self.states,
                _pub=self.pub('/initialpose'),
                _distant_pub=self.pub('/fiducial_localizer/distant_tags'))
        self.adapter = node
        self.config = config

    def handlers(self, watch):
        """fiducial_transforms, tf_static and the robot state."""
        node = self.adapter

        def on_state(t, msg):
            if not self.gate_open:
                self.states.state = _state_of(msg)
                node._on_state(self.states.state)
        return {
            '/fiducial_transforms': lambda t, m: self.on_fiducials(m, watch),
            '/tf_static': lambda t, m: self.buffer.feed(m, static=True),
            '/lost_service/state': on_state,
        }

    def on_fiducials(self, msg, watch):
        """One fiducial_transforms message."""
        watch.measure('fiducial_transforms', self.adapter._on_fiducials, msg)


class FiducialOpenHarness(FiducialHarness):
    """fiducial_localizer with its gate open: every detection goes through the estimate."""

    primary = ('fiducial_transforms (LOST, gate open)',)
    order = primary
    inputs = {'fiducial_transforms (LOST, gate open)': '/fiducial_transforms'}
    covers = {
        'fiducial_transforms (LOST, gate open)': 'FiducialLocalizerNode._on_fiducials for '
        'messages with at least one tag, in state LOST with the rate limit reset before each '
        'message: tf lookup base <- camera, observations_from_msg (quaternion -> 4x4 per '
        'tag), FiducialLocalizer.estimate (checks and pose per tag), the initialpose message '
        '(serialized when subscribed) and the log line; for a frame whose tags were all '
        'refused, the distant_tags message instead.',
    }
    gate_open = True

    def reset(self):
        """As FiducialHarness, and check that the adapter still keeps its gate in ``_gate``."""
        super().reset()
        install(self.adapter, _gate=self.adapter._gate)

    def on_fiducials(self, msg, watch):
        """Only messages with tags; the 1/min_interval rate limit is reset before each."""
        from lost_and_found.core.fiducial import PublishGate
        if not msg.transforms:
            return
        self.adapter._gate = PublishGate(self.config.publish_in_states,
                                         self.config.min_interval)
        watch.measure('fiducial_transforms (LOST, gate open)', self.adapter._on_fiducials, msg)


class PanoramaHarness(Harness):
    """panorama_localizer: PanoramaLocalizerNode, fed as recorded (state from the run); the
    matches it starts are run, and timed, after the scan that started them."""

    node = 'panorama_localizer'
    primary = ('scan',)
    match_series = 'match (worker thread)'
    order = ('scan', match_series)
    inputs = {'scan': '/scan'}
    covers = {
        'scan': 'PanoramaLocalizerNode._on_scan in the recorded robot states: the clock '
        'check under the lock; in LOST (while fixes are left) two tf lookups (odom <- laser '
        'and odom <- base at the scan stamp), every beam_step-th return placed in the '
        'odometry frame and kept one per cell, the headings marked and the rule of when a '
        'match is due (the match runs in a worker thread: the next row).',
        match_series: 'PanoramaLocalizerNode._match: PanoramaMatcher.match (the FFT '
        'correlation over the whole map at every second heading, then the fine search '
        'around the candidates), PanoramaEpisodes.finished, the initialpose message of a '
        'fix and the log line. Its samples are the matches the replay starts (a few per '
        'pass); the wall time is the one that counts, a match holds no lock the callbacks '
        'wait for. The replay runs each match right after the scan that started it, so no '
        'scan arrives during a match (in the graph those wait for the next one).',
    }
    gate_open = False

    def reset(self):
        """A fresh node with a replay tf buffer, its matcher of the recorded map, and matches
        queued instead of started in a thread."""
        import rospy
        from lost_and_found.core.panorama import PanoramaConfig
        from lost_and_found.nodes.panorama_localizer import PanoramaLocalizerNode
        from lost_and_found.state import State
        config = _config(PanoramaConfig, self.recording.node_params('panorama_localizer'))
        node = PanoramaLocalizerNode(config)
        self.buffer = _replay_buffer_class()(rospy.Duration(30.0))
        self.jobs = []
        install(node, _tf_buffer=self.buffer, _pub=self.pub('/initialpose'),
                _start_match=lambda matcher, stamp, job: self.jobs.append((matcher, stamp,
                                                                           job)))
        if not hasattr(self, '_built'):
            # Once per harness, the map sim_localizer publishes on /map (as map_server
            # would). A map the node refuses (its error, logged) leaves it without a matcher,
            # as in the graph: its scans are timed, and no match is.
            node._on_map(self.map_msg(config.map_frame))
            self._built = (node._matcher, node._map_key)
        else:
            install(node, _matcher=self._built[0], _map_key=self._built[1])
        if self.gate_open:
            node._on_state(State.LOST)
        self.adapter = node
        self.config = config

    def handlers(self, watch):
        """scan, tf, tf_static and the robot state."""
        node = self.adapter

        def scan(msg):
            watch.measure(self.primary[0], node._on_scan, msg)
            while self.jobs:
                matcher, stamp, job = self.jobs.pop(0)
                watch.measure(self.match_series, node._match, matcher, stamp, *job)
                self.after_match()

        def on_state(t, msg):
            if not self.gate_open:
                node._on_state(_state_of(msg))
        hold = ScanHold(self.buffer, self.config.odom_frame, self.config.base_frame, scan)
        return {'/scan': hold.on_scan, '/tf': hold.on_tf,
                '/tf_static': lambda t, m: self.buffer.feed(m, static=True),
                '/lost_service/state': on_state}

    def after_match(self):
        """After each match (the recorded states: nothing)."""


class PanoramaOpenHarness(PanoramaHarness):
    """panorama_localizer as if LOST throughout: every scan is gathered and a match starts
    whenever the rules say one is due, so that the recording gives matches to time."""

    primary = ('scan (LOST throughout)',)
    match_series = 'match (worker thread; LOST throughout)'
    order = (primary[0], match_series)
    inputs = {primary[0]: '/scan'}
    covers = {
        primary[0]: 'PanoramaLocalizerNode._on_scan with the robot LOST throughout (a new '
        'lost episode whenever an episode\'s fixes are spent, so that gathering never stops): '
        'the gathering path of the row "scan" above for every scan, and starting a match '
        'when partial_share of the headings, then every partial_step more, then the full '
        'turn have been looked at (a part with a fix starts the count again). While the '
        'robot drives, its returns of a turn lie along its path, more of them than a turn in '
        'place gives: the matches are the dearer for it.',
        match_series: 'PanoramaLocalizerNode._match, as in the row "match (worker thread)", '
        'for the matches of the row above.',
    }
    gate_open = True

    def after_match(self):
        """A new lost episode once this one's fixes are spent (the node would stop gathering)."""
        from lost_and_found.state import State
        if not self.adapter._episodes.gathering():
            self.adapter._on_state(State.FLYING)
            self.adapter._on_state(State.LOST)


class LocalizerHarness(Harness):
    """sim_localizer: SimLocalizerNode around a ParticleFilter with a fixed-size cloud."""

    node = 'sim_localizer'
    inputs = {}

    def __init__(self, recording, particles, seed=0):
        """``particles`` = min_particles = max_particles."""
        super().__init__(recording)
        self.particles = int(particles)
        self.seed = seed
        self.node = 'sim_localizer (%d particles)' % self.particles
        self.covers_label = 'sim_localizer (any particle count)'
        self.s_all = 'scan'
        self.s_update = 'scan: filter update'
        self.s_skip = 'scan: no update (no motion)'
        self.s_cloud = 'particlecloud message build'
        self.primary = (self.s_all, self.s_update)
        self.order = (self.s_all, self.s_update, self.s_skip, self.s_cloud, 'initialpose')
        self.inputs = {self.s_all: '/scan', self.s_update: '/scan', self.s_skip: '/scan',
                       'initialpose': '/initialpose'}
        self.covers = {
            self.s_all: 'SimLocalizerNode.on_scan for every recorded scan: stamp check, tf '
            'lookup odom -> base at the scan stamp (tf2 buffer fed with the recorded /tf), '
            'Scan from the ranges, ParticleFilter.update, and after an update that publishes: '
            'estimate, map -> odom, amcl_pose message, particlecloud message every 0.5 sim s '
            '(serialized only if subscribed) and the tf broadcast.',
            self.s_update: 'the scans of the row above that ran the filter (motion beyond '
            'update_min_d / update_min_a, or forced): motion model + likelihood field + '
            'resampling + estimate + messages.',
            self.s_skip: 'the scans that returned after the motion check.',
            self.s_cloud: 'cloud_msg alone (a geometry_msgs/Pose per particle), timed '
            'separately after up to %d updates: the scan callback builds it after an update '
            'at most every 0.5 sim s, also when nobody subscribes to particlecloud (serializing '
            'it is skipped then).' % CLOUD_SAMPLES,
            'initialpose': 'SimLocalizerNode.on_initial_pose: the pose carried along the '
            'odometry since its stamp (two tf lookups) + ParticleFilter.initialize.',
        }

    def reset(self):
        """A fresh filter and node (same seed every pass)."""
        import numpy as np
        from lost_and_found.nodes.sim_localizer import SimLocalizerNode
        from lost_and_found.sim.gridmap import load_map
        from lost_and_found.sim.particle_filter import ParticleFilter, SimLocalizerConfig
        params = self.recording.node_params('sim_localizer')
        params.update(max_particles=self.particles, min_particles=self.particles)
        config = _config(SimLocalizerConfig, params)
        if not hasattr(self, '_grid'):
            self._grid = load_map(config.map_file)
        self.pf = ParticleFilter(config, self._grid, np.random.default_rng(self.seed))
        self.config = config
        node = SimLocalizerNode(self.pf, config)
        import rospy
        self.buffer = _replay_buffer_class()(rospy.Duration(30.0))
        install(node, _buffer=self.buffer, _broadcaster=NullBroadcaster(
            self.recording.is_subscribed('/tf')), _pose_pub=self.pub('/amcl_pose'),
            _cloud_pub=self.pub('/particlecloud'))
        self.adapter = node

    def handlers(self, watch):
        """scan, initialpose and the odometry tf (not the localizer's own map -> odom)."""
        from lost_and_found.nodes.sim_localizer import cloud_msg
        node, c = self.adapter, self.config

        def own(transform):
            # the recorded localizer's own output
            return transform.header.frame_id.lstrip('/') == c.global_frame_id and \
                transform.child_frame_id.lstrip('/') == c.odom_frame_id

        def scan(msg):
            before = self.pf.updates
            watch.measure(self.s_all, node.on_scan, msg)
            updated = self.pf.updates > before
            watch.add_last(self.s_update if updated else self.s_skip)
            if updated and len(watch.samples.get(self.s_cloud, ())) < CLOUD_SAMPLES:
                # Part of an update every 0.5 sim s, timed once more on its own.
                watch.measure(self.s_cloud, cloud_msg, self.pf, msg.header.stamp,
                              c.global_frame_id)
        hold = ScanHold(self.buffer, c.odom_frame_id, c.base_frame_id, scan, skip=own)
        return {'/scan': hold.on_scan, '/tf': hold.on_tf,
                '/tf_static': lambda t, m: self.buffer.feed(m, static=True),
                '/initialpose': lambda t, m: watch.measure('initialpose',
                                                           node.on_initial_pose, m)}


class NavigatorHarness(Harness):
    """sim_navigator: NavigationNode's control period on the recorded goals, tf and scans."""

    node = 'sim_navigator'
    primary = ('control period',)
    order = ('control period', 'control period: with a global plan', 'goal', 'scan')
    inputs = {'goal': '/move_base/goal', 'scan': '/scan'}
    covers = {
        'control period': 'one period of NavigationNode._run\'s loop (replicated: the loop '
        'itself blocks in rate.sleep): _estimated_pose (tf lookup map -> base_footprint, '
        'age check), _obstacles (scan_obstacles of the latest scan), Navigation.step '
        '(re-planning at planner_frequency, pure pursuit, obstacle stop), the cmd_vel '
        'message and the feedback message (serialized when subscribed), ~plan on a new path; '
        'while a recorded goal is active.',
        'control period: with a global plan': 'the periods of the row above in which the '
        'global planner ran and returned a path (Planner.plan on the inflated map).',
        'goal': 'the start of a recorded move_base goal: _goal_in_frame + Navigation.start '
        '(the action server\'s goal handling is not included).',
        'scan': 'NavigationNode._on_scan: keep the message under the lock.',
    }

    def reset(self):
        """A fresh Navigation and node on the map."""
        from lost_and_found.nodes.sim_navigator import NavigationNode
        from lost_and_found.sim.controller import Navigation, NavigatorConfig, PathFollower
        from lost_and_found.sim.gridmap import load_map
        from lost_and_found.sim.planner import Planner
        config = _config(NavigatorConfig, self.recording.node_params('sim_navigator'))
        if not hasattr(self, '_planner'):
            self._planner = Planner(load_map(config.map_file), config.planner_config())
        navigation = Navigation(self._planner, PathFollower(config.follower_config()), config)
        node = NavigationNode(navigation, config)
        import rospy
        self.buffer = _replay_buffer_class()(rospy.Duration(30.0))
        install(node, _tf=self.buffer, _cmd_pub=self.pub('/cmd_vel'),
                _plan_pub=self.pub('/sim_navigator/plan'),
                _server=NullActionServer(self.recording.is_subscribed('/move_base/feedback')),
                _name='/sim_navigator')
        self.period = 1.0 / config.controller_frequency
        self.config = config
        self.adapter = node

    def handlers(self, watch):
        """Goals, cancels, scans and tf."""
        node = self.adapter

        # Every goal on move_base/goal reached the action server (also the ones the
        # navigator forwarded from move_base_simple/goal); any cancel preempts the goal.
        return {'/move_base/goal': lambda t, m: watch.measure('goal', self.start_goal,
                                                              m.goal.target_pose, t),
                '/move_base/cancel': lambda t, m: node._nav.stop(),
                '/scan': lambda t, m: watch.measure('scan', node._on_scan, m),
                '/tf': lambda t, m: self.buffer.feed(m),
                '/tf_static': lambda t, m: self.buffer.feed(m, static=True)}

    def start_goal(self, target, t):
        """What _run does with a new goal before its loop."""
        try:
            x, y, yaw = self.adapter._goal_in_frame(target)
        except ValueError:
            return
        self.adapter._nav.start(x, y, yaw, t)

    def on_timer(self, t, watch):
        """One control period while a goal is active."""
        if not self.adapter._nav.active:
            return
        step = watch.measure('control period', self.control_period, t)
        if step is not None and step.new_path:
            watch.add_last('control period: with a global plan')

    def control_period(self, now):
        """The body of NavigationNode._run's loop (preemption and debug logging left out)."""
        import rospy
        from lost_and_found.nodes.sim_navigator import path_msg, twist_msg
        node, nav = self.adapter, self.adapter._nav
        pose = node._estimated_pose()
        step = nav.step(pose, now, node._obstacles(now))
        if step.outcome is not None:
            node._stop_robot()
            return step
        if step.new_path and nav.path is not None:
            node._plan_pub.publish(path_msg(nav.path.tolist(), self.config.global_frame,
                                            rospy.Time.now()))
        node._cmd_pub.publish(twist_msg(step.linear, step.angular))
        if pose is not None:
            node._feedback(pose)
        return step


class WorldHarness(Harness):
    """sim_world: SimWorldNode's sim loop step, driven by the recorded cmd_vel."""

    node = 'sim_world'
    primary = ('step', 'step with a laser scan')
    order = ('step', 'step with a laser scan', 'step with a camera frame',
             'step without scan or camera', 'cmd_vel')
    inputs = {'cmd_vel': '/cmd_vel'}
    covers = {
        'step': 'SimWorldNode._tick (one sim loop iteration, every ~step sim s): World.step '
        '(drive, odometry, kidnap schedule) and, when due, the ray-cast laser scan, the '
        'camera\'s fiducial detections, odometry and SensorState, their messages and tf, '
        'the /clock message; messages serialized when their topic had a subscriber. The '
        'world follows the recorded cmd_vel open loop (the recorded lift is not replayed).',
        'step with a laser scan': 'the steps of the row above that produced a scan '
        '(World.scan: one ray per beam through the grid, + the LaserScan message).',
        'step with a camera frame': 'the steps that produced a fiducial_transforms message '
        '(Camera.detect: visibility and line of sight of every mapped tag).',
        'step without scan or camera': 'the remaining steps.',
        'cmd_vel': 'SimWorldNode._on_cmd_vel: World.command under the lock.',
    }

    def reset(self):
        """A fresh World and node at the start pose."""
        from lost_and_found.core.fiducial import load_fiducial_map
        from lost_and_found.nodes.sim_world import SimWorldNode
        from lost_and_found.sim.gridmap import load_map
        from lost_and_found.sim.world import SimWorldConfig, World
        config = _config(SimWorldConfig, self.recording.node_params('sim_world'))
        if not hasattr(self, '_grid'):
            self._grid = load_map(config.map_file)
            self._fiducials = load_fiducial_map(config.fiducial_map) \
                if config.fiducial_map else None
        world = World(config, self._grid, self._fiducials)
        node = SimWorldNode(world, config)
        names = {'clock': '/clock', 'scan': '/scan', 'odom': '/odom',
                 'wheel_drop': '/mobile_base/events/wheel_drop',
                 'core': '/mobile_base/sensors/core', 'ground_truth': '/sim_world/ground_truth',
                 'collisions': '/sim_world/collisions'}
        if world.camera is not None:
            names['fiducials'] = '/fiducial_transforms'
        periods = {'scan': 1.0 / config.scan_rate, 'odom': 1.0 / config.odom_rate,
                   'core': 1.0 / config.sensor_state_rate, 'camera': 1.0 / config.camera_rate}
        # The sensor schedule start() sets up.
        install(node, _pubs={key: self.pub(topic) for key, topic in names.items()},
                _tf=NullBroadcaster(self.recording.is_subscribed('/tf')),
                _due={name: [world.time, period] for name, period in periods.items()})
        self.world, self.adapter, self.config = world, node, config

    def run_pass(self, events, watch, clock):
        """Step the world over the recording's duration, delivering cmd_vel on time."""
        commands = [(t, msg) for t, topic, msg in events if topic == '/cmd_vel']
        if not events:
            return
        t0, duration = events[0][0], events[-1][0] - events[0][0]
        node, world, due = self.adapter, self.world, self.adapter._due
        index = 0
        while world.time < duration:
            while index < len(commands) and commands[index][0] - t0 <= world.time:
                watch.measure('cmd_vel', node._on_cmd_vel, commands[index][1])
                index += 1
            clock(t0 + world.time)
            scan_due, camera_due = due['scan'][0], due['camera'][0]
            watch.measure('step', node._tick)
            scanned = due['scan'][0] != scan_due
            framed = due['camera'][0] != camera_due and world.camera is not None
            if scanned:
                watch.add_last('step with a laser scan')
            if framed:
                watch.add_last('step with a camera frame')
            if not scanned and not framed:
                watch.add_last('step without scan or camera')


def measure_harness(harness, events, wanted, max_passes, budget_s, clock):
    """Replay ``events`` through ``harness`` until its main series have ``wanted`` samples.

    An untimed warm-up replays the first WARMUP_EVENTS events; each timed pass starts from a
    fresh adapter and core.

    Returns:
        ``(stopwatch, passes)``.
    """
    watch = Stopwatch()
    watch.enabled = False
    harness.reset()
    harness.run_pass(events[:WARMUP_EVENTS], watch, clock)
    watch.enabled = True
    passes, start = 0, time.monotonic()
    while passes < max_passes:
        harness.reset()
        harness.run_pass(events, watch, clock)
        passes += 1
        if not short_series(watch.samples, harness.primary, wanted) or \
                time.monotonic() - start > budget_s:
            break
    return watch, passes


def harness_result(harness, watch, passes, recording, log):
    """The JSON entry of one harness: stats (µs) per series and what each covers."""
    series = {name: us_stats(values) for name, values in watch.samples.items()}
    for name, stats in series.items():
        cpu = us_stats(watch.cpu_samples[name])
        stats['cpu_median'], stats['cpu_p99'] = cpu['median'], cpu['p99']
    order = list(harness.order) + sorted(set(series) - set(harness.order))
    deserialize = {}
    for name, topic in harness.inputs.items():
        values = recording.deserialize_ns.get(topic)
        if values:
            deserialize[name] = report.percentile(values, 50) / 1000.0
    return {'node': harness.node, 'covers_label': harness.covers_label or harness.node,
            'order': [s for s in order if s in series],
            'series': series, 'covers': dict(harness.covers), 'deserialize': deserialize,
            'passes': passes, 'log': {'warning': log.counts.get('warning', 0),
                                      'error': log.counts.get('error', 0),
                                      'first': list(log.first)}}


def part_a(ctx, recording, counts, quick):
    """Time every node's callbacks on the recording; one entry per harness."""
    wanted, max_passes, budget = pick(SAMPLES, quick), pick(MAX_PASSES, quick), \
        pick(PASS_BUDGET_S, quick)
    harnesses = [KidnapMonitorHarness(recording), LostDetectorHarness(recording),
                 LostDetectorNoStripHarness(recording), LostServiceHarness(recording),
                 RecoveryHarness(recording), WanderHarness(recording)]
    if ctx.args.fiducials:
        harnesses += [FiducialHarness(recording), FiducialOpenHarness(recording)]
    harnesses += [PanoramaHarness(recording), PanoramaOpenHarness(recording)]
    harnesses += [LocalizerHarness(recording, n, seed=ctx.args.seed) for n in counts]
    harnesses += [NavigatorHarness(recording), WorldHarness(recording)]
    results = []
    for harness in harnesses:
        with replay_environment() as (clock, log), frozen_heap():
            watch, passes = measure_harness(harness, recording.events, wanted, max_passes,
                                            budget, clock)
        entry = harness_result(harness, watch, passes, recording, log)
        results.append(entry)
        main = entry['series'].get(harness.order[0]) if harness.order else None
        ctx.progress('callbacks %-32s %d pass(es), %s: median %s µs, p99 %s µs, CPU median '
                     '%s µs (n=%s)' % (
                         harness.node, passes, harness.order[0] if harness.order else '-',
                         report.fmt(main and main['median'], 1),
                         report.fmt(main and main['p99'], 1),
                         report.fmt(main and main['cpu_median'], 1), main and main['n']))
    return results


# ------------------------------------------------------------------ graph runs (child process)

class Driver:
    """The bench's rospy side of a graph run: goals to move_base, the robot state, amcl_pose.

    Args:
        rospy: the initialised rospy module.
        goals: ``[(x, y, yaw)]`` driven in turn (cycling).
        frame: frame of the goals.
    """

    def __init__(self, rospy, goals, frame='map'):
        """Subscribe and create the action client."""
        from geometry_msgs.msg import PoseWithCovarianceStamped
        from move_base_msgs.msg import MoveBaseAction
        from std_msgs.msg import String

        from lost_and_found.nodes.goal_client import GoalClient
        self.rospy = rospy
        self.goals = [tuple(g) for g in goals]
        self.frame = frame
        self.client = GoalClient('move_base', MoveBaseAction)
        self.state = None
        self.poses = []                 # (arrival sim s, stamp sim s)
        self.first_feedback = None
        self.drive_start = None         # when the goal of the first feedback was sent
        self.sent = 0
        self._sent_at = None
        self.outcomes = collections.Counter()
        self.last_outcome = None
        self._active = False
        self._server = False
        self._subs = [rospy.Subscriber('/lost_service/state', String, self._on_state),
                      rospy.Subscriber('/amcl_pose', PoseWithCovarianceStamped, self._on_pose)]

    def _on_state(self, msg):
        self.state = msg.data

    def _on_pose(self, msg):
        self.poses.append((self.rospy.get_time(), msg.header.stamp.to_sec()))

    def _on_feedback(self, _feedback):
        if self.first_feedback is None:
            self.first_feedback = self.rospy.get_time()
            self.drive_start = self._sent_at

    def ready(self):
        """True once move_base, amcl_pose and the robot state are there."""
        if not self._server:
            self._server = self.client.wait_for_server(self.rospy.Duration(0.05))
        return self._server and self.state is not None and bool(self.poses)

    def poll(self):
        """Note a finished goal; send the next one when the robot is IDLE."""
        from actionlib import SimpleGoalState
        from move_base_msgs.msg import MoveBaseGoal
        from lost_and_found.nodes.conversions import quaternion_from_yaw
        if self._active and self.client.simple_state == SimpleGoalState.DONE:
            self._active = False
            self.last_outcome = self.client.get_state()
            self.outcomes[self.last_outcome] += 1
        if should_send_goal(self._active, self.state, self.last_outcome):
            x, y, yaw = self.goals[self.sent % len(self.goals)]
            goal = MoveBaseGoal()
            goal.target_pose.header.frame_id = self.frame
            goal.target_pose.header.stamp = self.rospy.Time.now()
            goal.target_pose.pose.position.x, goal.target_pose.pose.position.y = x, y
            goal.target_pose.pose.orientation = quaternion_from_yaw(yaw)
            self._sent_at = self.rospy.get_time()
            self.client.send_goal(goal, feedback_cb=self._on_feedback)
            self.sent += 1
            self._active = True


def _node_pids(master_uri, names, caller=CHILD_NODE):
    """name -> pid of each running node among ``names`` (asked through the ROS master API)."""
    import xmlrpc.client
    import rosgraph
    master = rosgraph.Master(caller, master_uri=master_uri)
    pids = {}
    for name in names:
        try:
            uri = master.lookupNode(name)
            code, _, pid = xmlrpc.client.ServerProxy(uri).getPid(caller)
        except (rosgraph.MasterError, OSError, xmlrpc.client.Error):
            continue
        if code == 1:
            pids[name] = int(pid)
    return pids


def _cpu_snapshot(pids):
    """name -> CPU seconds of each pid (processes that are gone are left out)."""
    ticks = os.sysconf('SC_CLK_TCK')
    out = {}
    for name, pid in pids.items():
        try:
            with open('/proc/%d/stat' % pid) as stream:
                out[name] = cpu_seconds(stream.read(), ticks)
        except (OSError, ValueError):
            continue
    return out


def graph_run(spec):
    """Run one graph as ``spec`` says and return what was measured (runs in a child process).

    Args:
        spec: dict with ``name``, ``log_dir``, ``map_file``, ``fiducial_map``, ``sim_params``,
            ``particles``, ``min_particles``, ``seed``, ``goals``, ``warmup_s``,
            ``duration_s``, ``wall_timeout_s``, ``bag`` (path or None), ``kidnap_at`` (sim s
            into the window, or None).
    """
    import rosgraph
    from lost_and_found.bench.graph import RosGraph
    from lost_and_found.bench.simrun import fiducial_launch_args
    result = {'name': spec['name'], 'particles': spec['particles'],
              'min_particles': spec['min_particles'], 'seed': spec['seed'],
              'load_average_before': [round(v, 2) for v in os.getloadavg()]}
    fiducials = fiducial_launch_args(spec.get('fiducial_map'))
    with RosGraph(spec['log_dir']) as graph:
        sim = graph.launch('sim', 'lost_and_found', 'sim.launch', dict(fiducials, **{
            'map_file': spec['map_file'],
            'sim_params': spec['sim_params'], 'speed': 0, 'particles': spec['particles'],
            'min_particles': spec['min_particles'], 'seed': spec['seed']}))
        package_args = dict(fiducials, cmd_vel_topic='cmd_vel', amcl_pose_topic='amcl_pose',
                            base_frame='base_footprint')
        package = graph.launch('package', 'lost_and_found', 'lost_and_found.launch',
                               package_args)
        result['commands'] = [launch_command(sim.log_path), launch_command(package.log_path)]
        master = rosgraph.Master(CHILD_NODE + '_probe', master_uri=graph.uri)
        graph.wait_for(lambda: master.hasParam('/use_sim_time'), STARTUP_TIMEOUT,
                       '/use_sim_time from sim.launch')
        rospy = graph.init_node(CHILD_NODE.strip('/'))
        recorder = _start_recorder(graph, spec['bag'], spec['log_dir']) \
            if spec.get('bag') else None
        try:
            result.update(_drive_and_measure(graph, rospy, spec))
            if recorder is not None:
                result['subscribed'] = subscribed_topics(master.getSystemState())
                result['params'] = master.getParam('/')
        except BaseException:
            if recorder is not None:      # never leave it running; the first error is news
                with contextlib.suppress(Exception):
                    _stop_recorder(graph, recorder, spec['bag'])
            raise
        if recorder is not None:
            _stop_recorder(graph, recorder, spec['bag'])
        result['bag'] = spec.get('bag')
        result['load_average_after'] = [round(v, 2) for v in os.getloadavg()]
        rospy.signal_shutdown('graph run done')
    return result


def _drive_and_measure(graph, rospy, spec):
    """Drive, warm up, then measure one window of sim time (and lift the robot if asked)."""
    driver = Driver(rospy, spec['goals'])
    graph.wait_for(driver.ready, STARTUP_TIMEOUT,
                   'move_base, the first amcl_pose and /lost_service/state')

    def driving_until(condition):
        def predicate():
            driver.poll()
            return condition()
        return predicate
    graph.wait_for(driving_until(lambda: driver.first_feedback is not None),
                   STARTUP_TIMEOUT, 'the robot driving (move_base feedback)')
    warm_end = driver.first_feedback + spec['warmup_s']
    graph.wait_for(driving_until(lambda: rospy.get_time() >= warm_end),
                   spec['wall_timeout_s'], 'the warm-up (%.0f sim s)' % spec['warmup_s'])
    pids = _node_pids(graph.uri, GRAPH_NODES)
    pids[CHILD_NODE] = os.getpid()
    cpu0 = _cpu_snapshot(pids)
    sim0, wall0 = rospy.get_time(), time.monotonic()
    poses0, sent0 = len(driver.poses), driver.sent
    reached0, aborted0 = driver.outcomes.get(SUCCEEDED, 0), driver.outcomes.get(ABORTED, 0)
    kidnap = {}
    if spec.get('kidnap_at') is not None:
        kidnap_time = sim0 + spec['kidnap_at']
        graph.wait_for(driving_until(lambda: rospy.get_time() >= kidnap_time),
                       spec['wall_timeout_s'], 'the kidnap time')
        kidnap = _kidnap(rospy)
    end = sim0 + spec['duration_s']
    graph.wait_for(driving_until(lambda: rospy.get_time() >= end), spec['wall_timeout_s'],
                   'the end of the window (%.0f sim s)' % spec['duration_s'])
    sim1, wall1 = rospy.get_time(), time.monotonic()
    cpu1 = _cpu_snapshot(pids)
    sim_s = sim1 - sim0
    cpu = {n: cpu1[n] - cpu0[n] for n in cpu0 if n in cpu1}
    window = driver.poses[poses0:]
    return {'rtf': real_time_factor(sim0, sim1, wall0, wall1), 'sim_s': sim_s,
            'drive_start_sim': driver.drive_start, 'window_sim': [sim0, sim1],
            'wall_s': wall1 - wall0, 'cpu_s': cpu,
            'cpu_per_sim_s': {n: v / sim_s for n, v in cpu.items()},
            'cores_busy': sum(v for n, v in cpu.items() if n != CHILD_NODE) / (wall1 - wall0),
            'goals_sent': driver.sent - sent0,
            'goals_reached': driver.outcomes.get(SUCCEEDED, 0) - reached0,
            'goals_aborted': driver.outcomes.get(ABORTED, 0) - aborted0,
            'goal_outcomes': {str(k): v for k, v in driver.outcomes.items()},
            'amcl_pose_per_sim_s': len(window) / sim_s,
            'amcl_lag_sim_s': report.stats([arrival - stamp for arrival, stamp in window]),
            'kidnap': kidnap}


def _kidnap(rospy):
    """Lift the robot to a random free pose >= KIDNAP_DISTANCE away (sim_world's ~kidnap)."""
    from lost_and_found.srv import Kidnap, KidnapRequest
    try:
        rospy.wait_for_service('/sim_world/kidnap', timeout=10.0)
        response = rospy.ServiceProxy('/sim_world/kidnap', Kidnap)(
            KidnapRequest(random=True, min_distance=KIDNAP_DISTANCE, hold=0.0))
    except (rospy.ROSException, rospy.ServiceException) as error:
        return {'success': False, 'message': str(error)}
    return {'success': response.success, 'message': response.message,
            'at_sim_s': rospy.get_time(),
            'put_down': [response.pose.x, response.pose.y, response.pose.theta]}


def _start_recorder(graph, bag, log_dir):
    """``rosbag record`` of RECORD_TOPICS into ``bag`` (its own process group)."""
    log = open(os.path.join(log_dir, 'rosbag_record.log'), 'w')
    command = ['rosbag', 'record', '--output-name=%s' % bag,
               '__name:=%s' % RECORDER_NODE.strip('/')] + list(RECORD_TOPICS)
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=graph.env,
                               start_new_session=True)
    log.close()
    return process


def _stop_recorder(graph, process, bag, timeout=30.0):
    """SIGINT (rosbag closes the bag), then wait until the bag is closed and renamed.

    ``rosbag record`` is a wrapper around the ``record`` binary: the wrapper may exit before
    the binary has renamed ``<bag>.active`` to ``<bag>``.
    """
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(5.0)
        raise ComputeError('rosbag record did not stop within %.0f s' % timeout)
    graph.wait_for(lambda: os.path.isfile(bag) and not os.path.exists(bag + '.active'),
                   timeout, 'rosbag record to close %s' % bag)


def run_child(ctx, spec, timeout):
    """Run :func:`graph_run` in a child process; return its result (or ``{'error': ...}``)."""
    name = spec['name']
    spec = dict(spec, log_dir=os.path.join(ctx.log_dir, name))
    os.makedirs(spec['log_dir'], exist_ok=True)
    spec_path = os.path.join(spec['log_dir'], 'spec.json')
    result_path = os.path.join(spec['log_dir'], 'result.json')
    if os.path.exists(result_path):
        os.remove(result_path)
    report.write_json(spec_path, spec)
    log_path = os.path.join(spec['log_dir'], 'child.log')
    with open(log_path, 'w') as log:
        process = subprocess.Popen(
            [sys.executable, '-m', 'lost_and_found.bench.compute', spec_path, result_path],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            # SIGINT lets the child stop its graph (RosGraph.__exit__) before it goes.
            process.send_signal(signal.SIGINT)
            try:
                process.wait(60.0)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10.0)
            return {'error': 'timed out after %.0f wall s (log: %s)' % (timeout, log_path)}
    if process.returncode != 0 or not os.path.isfile(result_path):
        return {'error': 'exit code %s; the end of %s: %s' % (
            process.returncode, log_path, _tail(log_path))}
    with open(result_path) as stream:
        return json.load(stream)


def _tail(path, lines=8):
    try:
        with open(path, errors='replace') as stream:
            return ' '.join(line.strip() for line in stream.readlines()[-lines:])
    except OSError:
        return ''


def child_main(argv=None):
    """``python3 -m lost_and_found.bench.compute SPEC.json RESULT.json``: one graph run."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        sys.stderr.write('usage: python3 -m lost_and_found.bench.compute SPEC.json '
                         'RESULT.json\n')
        return 2
    with open(argv[0]) as stream:
        spec = json.load(stream)
    logging.basicConfig(level=logging.INFO)
    result = graph_run(spec)
    report.write_json(argv[1], result)
    return 0


# ------------------------------------------------------------------ the suite

def scenario_params(ctx, free):
    """The sim_params file for sim.launch: the map's own ``<map>_sim.yaml`` when it has one,
    otherwise one written into the output folder with a start pose drawn from the free space.

    Returns:
        ``(path, start_pose)``.
    """
    own = os.path.splitext(ctx.args.map)[0] + '_sim.yaml'
    if os.path.isfile(own):
        with open(own) as stream:
            data = yaml.safe_load(stream) or {}
        start = (data.get('sim_world') or {}).get('start_pose') or \
            (data.get('scenario') or {}).get('start_pose')
        if start and len(start) == 3:
            return own, [float(v) for v in start]
    x, y, yaw = free.sample(ctx.rng)
    data = {'sim_world': {'start_pose': [x, y, yaw]},
            'sim_localizer': {'initial_pose_x': x, 'initial_pose_y': y, 'initial_pose_a': yaw}}
    path = ctx.path('compute_sim_params.yaml')
    with open(path, 'w') as stream:
        yaml.safe_dump(data, stream)
    return path, [x, y, yaw]


def _spec(ctx, name, free, start, sim_params, particles, min_particles, duration, quick,
          bag=None, kidnap_at=None):
    warmup = pick(WARMUP_SIM_S, quick)
    return {'name': name, 'map_file': ctx.args.map, 'fiducial_map': ctx.args.fiducials,
            'sim_params': sim_params, 'particles': int(particles),
            'min_particles': int(min_particles), 'seed': int(ctx.rng.integers(2 ** 31 - 1)),
            'goals': free_goals(free, ctx.rng, start, GOALS), 'warmup_s': warmup,
            'duration_s': duration, 'bag': bag, 'kidnap_at': kidnap_at,
            'wall_timeout_s': STARTUP_TIMEOUT + (duration + warmup) / MIN_RTF}


def _timeout(spec):
    return 2 * STARTUP_TIMEOUT + spec['wall_timeout_s'] + 60.0


def run(ctx):
    """Run the suite: record, time the callbacks (Part A), sweep the particle count (Part B)."""
    from lost_and_found.bench.places import FreeSpace
    from lost_and_found.sim.gridmap import load_map
    quick = bool(ctx.args.quick)
    counts = QUICK_COUNTS if quick else PARTICLE_COUNTS
    machine = machine_info()
    ctx.progress('machine: %s x %s, load %s' % (
        machine['cpu_count'], machine['cpu_model'], machine['load_average']))
    free = FreeSpace(load_map(ctx.args.map))
    sim_params, start = scenario_params(ctx, free)

    # Part A: record the real graph, then replay into each node's adapter.
    duration = pick(RECORD_SIM_S, quick)
    bag = ctx.path('compute_recording.bag')
    for stale in (bag, bag + '.active'):
        if os.path.exists(stale):
            os.remove(stale)
    spec = _spec(ctx, 'record', free, start, sim_params, ctx.args.particles,
                 min(500, ctx.args.particles), duration, quick, bag=bag,
                 kidnap_at=KIDNAP_AT * duration)
    ctx.progress('recording %.0f sim s of the graph (%d max particles, one lift kidnap)'
                 % (duration, ctx.args.particles))
    recorded = run_child(ctx, spec, _timeout(spec))
    if recorded.get('error'):
        ctx.progress('recording failed: %s' % recorded['error'])
        return _failed(ctx, 'recording failed: %s' % recorded['error'], machine)
    missing = [n for n in ('sim_world', 'sim_localizer', 'sim_navigator', 'lost_detector')
               if not (recorded.get('params') or {}).get(n)]
    if missing:
        return _failed(ctx, 'the recorded graph has no parameters for %s' % ', '.join(missing),
                       machine)
    recording = load_recording(bag, recorded['params'], recorded['subscribed'])
    # From the goal the robot first drove to: before it the simulator raced ahead while the
    # nodes started, with the robot standing still.
    recording = recording.trimmed(recorded['drive_start_sim'] - CLOCK_SLACK,
                                  recorded['window_sim'][1])
    ctx.progress('recorded %d messages over %.1f sim s (RTF %.2f); kidnap %s' % (
        len(recording.events), recording.duration, recorded['rtf'],
        'ok' if recorded['kidnap'].get('success') else recorded['kidnap']))
    overhead = timing_overhead_ns()
    callbacks = part_a(ctx, recording, counts, quick)

    # Part B: the real-time factor per particle count.
    runs = []
    for count in counts:
        spec = _spec(ctx, 'rtf_%d' % count, free, start, sim_params, count, count,
                     pick(RTF_SIM_S, quick), quick)
        ctx.progress('RTF with %d particles: %.0f sim s after %.0f s warm-up' % (
            count, spec['duration_s'], spec['warmup_s']))
        result = run_child(ctx, spec, _timeout(spec))
        result.setdefault('particles', count)
        runs.append(result)
        if result.get('error'):
            ctx.progress('  failed: %s' % result['error'])
        else:
            ctx.progress('  RTF %.2f (%.1f sim s in %.1f wall s)' % (
                result['rtf'], result['sim_s'], result['wall_s']))

    localizer = {}
    for entry in callbacks:
        if entry['node'].startswith('sim_localizer ('):
            count = int(entry['node'].split('(')[1].split()[0])
            localizer[count] = entry['series'].get('scan: filter update', {})
    plots = [os.path.basename(rtf_plot(ctx.path('compute_rtf.png'), runs, localizer)),
             os.path.basename(callbacks_plot(ctx.path('compute_callbacks.png'), callbacks))]
    return suite_result(ctx, machine, recorded, recording, callbacks, overhead, runs, plots)


def _failed(ctx, reason, machine):
    return {'error': reason, 'summary': {'machine': machine}, 'trials': [],
            'markdown': 'Failed: %s' % reason, 'plots': []}


def suite_result(ctx, machine, recorded, recording, callbacks, overhead, runs, plots):
    """The suite's result dict (summary, every series and run, Markdown)."""
    counts = recording.topic_counts()
    summary = {
        'machine': machine,
        'quick': bool(ctx.args.quick),
        'timing_overhead_us': None if overhead is None else overhead / 1000.0,
        'recording': {'sim_s': recording.duration, 'messages': dict(counts),
                      'rtf': recorded.get('rtf'), 'particles': recorded.get('particles'),
                      'min_particles': recorded.get('min_particles'),
                      'kidnap': recorded.get('kidnap'), 'commands': recorded.get('commands')},
        'callbacks': {},
        'rtf': {str(r['particles']): r.get('rtf') for r in runs},
    }
    for e in callbacks:      # two harnesses may time one node (e.g. two strategies)
        summary['callbacks'].setdefault(e['node'], {}).update({
            s: {'median_us': e['series'][s]['median'], 'p99_us': e['series'][s]['p99'],
                'cpu_median_us': e['series'][s]['cpu_median'], 'n': e['series'][s]['n']}
            for s in e['order']})
    trials = [dict(kind='callbacks', **entry) for entry in callbacks]
    trials += [dict(kind='rtf', **{k: v for k, v in r.items() if k != 'params'})
               for r in runs]
    rec = summary['recording']
    markdown = [
        'Machine: %s x %s (load average %s at the start; other jobs may share it: RTF '
        'figures are only comparable from one run).' % (
            machine['cpu_count'], machine['cpu_model'], machine['load_average']),
        '',
        '## Callback cost per message (wall time, this process, one core)',
        '',
        'Input: %.1f sim s recorded from the running graph (`rosbag record`; %d max / %d min '
        'particles, RTF %.2f while recording, one lift kidnap: %s), %s. Each node\'s adapter '
        'class is fed the recorded messages in order with the recorded sim time as its ROS '
        'clock; its ROS handles are stand-ins that serialize outputs as rospy would when the '
        'topic had a subscriber. A fresh adapter and core per pass, after an untimed '
        'warm-up; the recording is kept out of garbage collection (gc.freeze), so collector '
        'pauses come from what the callbacks allocate.' % (
            rec['sim_s'], rec['particles'] or 0, rec['min_particles'] or 0, rec['rtf'] or 0.0,
            'done' if (rec['kidnap'] or {}).get('success') else 'not done',
            ', '.join('%d %s' % (counts[t], t) for t in
                      ('/scan', '/amcl_pose', '/mobile_base/sensors/core',
                       '/fiducial_transforms') if counts.get(t))),
        '',
        callbacks_markdown(callbacks, overhead),
        '',
        '## Real-time factor vs particle count',
        '',
        rtf_markdown(runs),
    ]
    return {'summary': summary, 'trials': trials, 'markdown': '\n'.join(markdown),
            'plots': plots}


if __name__ == '__main__':
    sys.exit(child_main())
