"""The compute suite's pure parts: parsing, timing bookkeeping, replay order, tables."""
import io
import math
import types

import numpy as np
import pytest

from lost_and_found.bench import compute


CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz
processor\t: 1
model name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz
"""


def test_cpu_model_reads_the_first_model_name():
    assert compute.cpu_model(CPUINFO) == 'Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz'
    assert compute.cpu_model('processor : 0\nModel : Raspberry Pi 4\n') == 'Raspberry Pi 4'
    assert compute.cpu_model('nothing useful here\n') == 'unknown'


def test_cpu_seconds_parses_utime_and_stime_after_a_name_with_spaces():
    # A name with a space and a parenthesis must not shift the fields (proc(5): the name is
    # the text between the first '(' and the last ')').
    fields = ['S'] + [str(i) for i in range(4, 14)] + ['250', '50'] + ['0'] * 30
    text = '1234 (sim (world) x) ' + ' '.join(fields)
    assert compute.cpu_seconds(text, 100) == pytest.approx(3.0)


@pytest.mark.parametrize('text', ['garbage without a name', '12 (x) S 1 2 3'])
def test_cpu_seconds_rejects_lines_that_are_not_stat_lines(text):
    with pytest.raises(ValueError, match='stat'):
        compute.cpu_seconds(text, 100)


def test_real_time_factor():
    assert compute.real_time_factor(10.0, 70.0, 100.0, 130.0) == pytest.approx(2.0)
    assert compute.real_time_factor(5.0, 5.0, 0.0, 1.0) == 0.0


@pytest.mark.parametrize('args', [(0.0, 1.0, 2.0, 2.0), (3.0, 1.0, 0.0, 1.0),
                                  (0.0, math.nan, 0.0, 1.0), (0.0, 1.0, None, 1.0)])
def test_real_time_factor_rejects_bad_windows(args):
    with pytest.raises(ValueError):
        compute.real_time_factor(*args)


@pytest.mark.parametrize('active, state, outcome, send', [
    (False, 'IDLE', None, True), (True, 'IDLE', None, False),
    (False, 'NAVIGATING', None, False), (False, 'NAVIGATING', 3, False),
    (False, 'NAVIGATING', 4, True), (True, 'NAVIGATING', 4, False),
    (False, 'LOST', 4, False), (False, None, None, False)])
def test_should_send_goal_when_idle_or_after_an_abort(active, state, outcome, send):
    assert compute.should_send_goal(active, state, outcome) is send


def test_pick_full_or_quick():
    assert compute.pick((60.0, 10.0), False) == 60.0
    assert compute.pick((60.0, 10.0), True) == 10.0


def test_us_stats_converts_nanoseconds():
    stats = compute.us_stats([1000, 2000, 3000])
    assert stats['n'] == 3 and stats['median'] == pytest.approx(2.0)
    assert stats['max'] == pytest.approx(3.0)


def test_stopwatch_records_wall_and_cpu_only_when_enabled():
    watch = compute.Stopwatch()
    watch.enabled = False
    assert watch.measure('a', lambda x: x + 1, 1) == 2
    assert watch.last_ns is not None and watch.last_ns >= 0
    watch.add_last('b')
    assert dict(watch.samples) == {} and dict(watch.cpu_samples) == {}
    watch.enabled = True
    watch.measure('a', sum, range(20000))
    watch.add_last('b')
    assert len(watch.samples['a']) == 1 and watch.samples['b'] == watch.samples['a']
    assert watch.cpu_samples['b'] == watch.cpu_samples['a']
    # CPU time of this thread cannot exceed the wall time around it (+ clock granularity).
    assert 0 <= watch.cpu_samples['a'][0] <= watch.samples['a'][0] + 1e6


def test_timing_overhead_is_a_small_positive_number():
    overhead = compute.timing_overhead_ns(calls=200)
    assert 0 < overhead < 1e6


def test_replay_interleaves_timer_ticks_with_messages():
    events = [(0.0, 'a', 'm0'), (0.25, 'b', 'm1'), (0.25, 'a', 'm2'), (0.55, 'a', 'm3')]
    calls, clock = [], []
    compute.replay(events, {'a': lambda t, m: calls.append(('a', t, m))}, clock.append,
                   period=0.2, on_timer=lambda t: calls.append(('tick', round(t, 6))))
    assert calls == [('a', 0.0, 'm0'), ('tick', 0.2), ('a', 0.25, 'm2'), ('tick', 0.4),
                     ('a', 0.55, 'm3')]
    # The clock is set before every call, to the call's time.
    assert [round(t, 6) for t in clock] == [0.0, 0.2, 0.25, 0.4, 0.55]


def test_replay_without_timer_feeds_only_handled_topics():
    seen = []
    compute.replay([(1.0, 'x', 1), (2.0, 'y', 2)], {'y': lambda t, m: seen.append(m)},
                   lambda t: None)
    assert seen == [2]


def test_trim_events_keeps_the_window_and_the_last_latched_message_before_it():
    events = [(0.0, '/tf_static', 's1'), (0.0, '/tf_static', 's2'),
              (1.0, '/lost_service/state', 'IDLE'), (2.0, '/lost_service/state', 'NAVIGATING'),
              (2.5, '/scan', 'old scan'), (3.0, '/scan', 'scan'), (4.0, '/amcl_pose', 'pose'),
              (9.0, '/scan', 'late')]
    out = compute.trim_events(events, 3.0, 5.0)
    assert out == [(3.0, '/tf_static', 's1'), (3.0, '/tf_static', 's2'),
                   (3.0, '/lost_service/state', 'NAVIGATING'), (3.0, '/scan', 'scan'),
                   (4.0, '/amcl_pose', 'pose')]


def test_short_series_ignores_series_without_any_sample():
    samples = {'a': [1] * 10, 'b': [1] * 3, 'c': []}
    assert compute.short_series(samples, ('a', 'b', 'c', 'd'), 5) == ['b']
    assert compute.short_series(samples, ('a',), 5) == []


def test_subscribed_topics_leaves_out_the_bench_and_the_recorder():
    state = [[], [['/scan', ['/sim_localizer', '/bench_record']],
                  ['/particlecloud', ['/bench_record']],
                  ['/amcl_pose', ['/bench_compute']]], []]
    assert compute.subscribed_topics(state) == {'/scan': True, '/particlecloud': False,
                                                '/amcl_pose': False}


def test_launch_command_reads_the_first_log_line(tmp_path):
    log = tmp_path / 'sim.log'
    log.write_text('$ roslaunch --wait lost_and_found sim.launch speed:=0\nmore\n')
    assert compute.launch_command(str(log)) == 'roslaunch --wait lost_and_found sim.launch ' \
        'speed:=0'
    assert compute.launch_command(str(tmp_path / 'missing.log')) == ''


class _Free:
    """A FreeSpace stand-in: poses on a line, the band filter applied like FreeSpace."""

    xs = np.arange(0.0, 20.0, 0.5)

    def sample(self, rng, near=None, min_distance=0.0, max_distance=math.inf):
        xs = self.xs
        if near is not None:
            d = np.abs(xs - near[0])
            xs = xs[(d >= min_distance) & (d <= max_distance)]
        if xs.size == 0:
            from lost_and_found.bench.places import PlacesError
            raise PlacesError('none')
        return float(xs[int(rng.integers(xs.size))]), 0.0, 0.5


def test_free_goals_are_spaced_and_reproducible():
    first = compute.free_goals(_Free(), np.random.default_rng(3), (0.0, 0.0), 12)
    again = compute.free_goals(_Free(), np.random.default_rng(3), (0.0, 0.0), 12)
    assert first == again and len(first) == 12
    previous = 0.0
    for x, y, _ in first:
        assert abs(x - previous) >= compute.GOAL_SPACING
        previous = x


def _entry(node='lost_detector', series='amcl_pose', values=(100000, 200000, 300000)):
    stats = compute.us_stats(list(values))
    stats.update(cpu_median=150.0, cpu_p99=250.0)
    return {'node': node, 'order': [series], 'series': {series: stats},
            'covers': {series: 'what it covers'}, 'deserialize': {series: 12.5},
            'passes': 1, 'log': {'warning': 2, 'error': 0, 'first': ['a warning']}}


def test_callbacks_markdown_has_a_row_per_series_and_says_what_it_covers():
    text = compute.callbacks_markdown([_entry()], overhead_ns=150.0)
    assert '| lost_detector | amcl_pose | 3 | 200.0 | 298.0 | 300.0 | 150.0 | 250.0 | 12.5 |' \
        in text
    assert '12.5' in text and '0.15 µs' in text
    assert '**lost_detector / amcl_pose**: what it covers' in text
    assert 'lost_detector: 2 / 0: a warning' in text


def test_rtf_markdown_shows_runs_failures_and_commands():
    ok = {'particles': 500, 'rtf': 3.456, 'sim_s': 60.0, 'wall_s': 17.4,
          'amcl_pose_per_sim_s': 1.5, 'amcl_lag_sim_s': {'median': 0.08, 'p95': 0.3},
          'cpu_per_sim_s': {'/sim_world': 0.1, '/sim_localizer': 0.2, '/lost_detector': 0.01,
                            '/lost_service': 0.02},
          'cores_busy': 1.5, 'goals_sent': 4, 'goals_reached': 3, 'goals_aborted': 1,
          'commands': ['roslaunch a', 'roslaunch b']}
    failed = {'particles': 5000, 'error': 'timed out'}
    text = compute.rtf_markdown([ok, failed])
    assert '| 500 | 3.46 | 60.0 | 17.4 | 1.50 | 80 / 300 | 0.100 | 0.200 | - | 0.030 | 1.50 ' \
        '| 4 / 3 / 1 |' in text
    assert '| 5000 | failed: timed out |' in text
    assert '- 500 particles: `roslaunch b`' in text


def test_plots_are_written(tmp_path):
    runs = [{'particles': 500, 'rtf': 4.0}, {'particles': 2000, 'rtf': 2.0},
            {'particles': 5000, 'error': 'x'}]
    costs = {500: {'median': 1500.0, 'p99': 3000.0, 'cpu_median': 1400.0},
             2000: {'median': 4000.0, 'p99': 9000.0, 'cpu_median': 3900.0}}
    path = compute.rtf_plot(str(tmp_path / 'rtf.png'), runs, costs)
    assert (tmp_path / 'rtf.png').stat().st_size > 1000 and path.endswith('rtf.png')
    compute.callbacks_plot(str(tmp_path / 'cb.png'), [_entry(), _entry('kidnap_monitor')])
    assert (tmp_path / 'cb.png').stat().st_size > 1000


def test_null_publisher_serializes_only_when_subscribed():
    calls = []

    class Probe:
        """Counts serializations; rospy's serialize_message calls serialize(buff)."""

        def serialize(self, buff):
            calls.append(1)
            buff.write(b'x')
    subscribed, silent = compute.NullPublisher('/a'), compute.NullPublisher('/b', False)
    subscribed.publish(Probe())
    silent.publish(Probe())
    assert calls == [1] and subscribed.count == silent.count == 1


def test_install_refuses_a_handle_the_adapter_does_not_use():
    class Adapter:
        def __init__(self):
            self._pub = 'real'

    adapter = Adapter()
    compute.install(adapter, _pub='stand-in')
    assert adapter._pub == 'stand-in'
    with pytest.raises(compute.ComputeError, match='self._renamed'):
        compute.install(adapter, _renamed=1)


def test_log_counter_counts_levels_and_keeps_the_first_messages():
    import logging
    counter = compute.LogCounter(keep=1)
    logger = logging.getLogger('test_bench_compute')
    logger.addHandler(counter)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    try:
        logger.warning('first %s', 'warning')
        logger.error('an error')
        logger.info('info')
    finally:
        logger.removeHandler(counter)
    assert counter.counts == {'warning': 1, 'error': 1, 'info': 1}
    assert counter.first == ['first warning']


def test_measure_harness_stops_when_the_main_series_are_full():
    class Counting(compute.Harness):
        primary = ('msg',)

        def reset(self):
            self.resets = getattr(self, 'resets', 0) + 1

        def handlers(self, watch):
            return {'t': lambda t, m: watch.measure('msg', lambda: None)}

    events = [(float(i), 't', None) for i in range(10)]
    harness = Counting(recording=None)
    watch, passes = compute.measure_harness(harness, events, 25, 10, 60.0, lambda t: None)
    # Warm-up pass untimed, then 3 timed passes of 10 reach 25.
    assert passes == 3 and len(watch.samples['msg']) == 30 and harness.resets == 4
    watch, passes = compute.measure_harness(harness, events, 25, 2, 60.0, lambda t: None)
    assert passes == 2 and len(watch.samples['msg']) == 20


def test_recording_counts_topics_and_reports_subscriptions():
    events = [(0.0, '/scan', 1), (0.1, '/scan', 2), (0.2, '/amcl_pose', 3)]
    recording = compute.Recording(events, {'sim_world': {'speed': 0}}, {'/particlecloud': False},
                                  {})
    assert recording.topic_counts() == {'/scan': 2, '/amcl_pose': 1}
    assert recording.duration == pytest.approx(0.2)
    assert not recording.is_subscribed('/particlecloud') and recording.is_subscribed('/scan')
    assert recording.node_params('/sim_world') == {'speed': 0}
    assert recording.node_params('lost_detector') == {}
    assert [e[2] for e in recording.trimmed(0.05, 1.0).events] == [2, 3]


def test_scenario_params_writes_a_start_pose_for_a_map_without_one(tmp_path):
    ctx = types.SimpleNamespace(args=types.SimpleNamespace(map=str(tmp_path / 'm.yaml')),
                                rng=np.random.default_rng(0),
                                path=lambda name: str(tmp_path / name))
    path, start = compute.scenario_params(ctx, _Free())
    import yaml
    data = yaml.safe_load(io.open(path))
    assert data['sim_world']['start_pose'] == start
    assert data['sim_localizer']['initial_pose_x'] == start[0]
    (tmp_path / 'm_sim.yaml').write_text('sim_world:\n  start_pose: [1.0, 2.0, 0.5]\n')
    assert compute.scenario_params(ctx, _Free()) == (str(tmp_path / 'm_sim.yaml'),
                                                     [1.0, 2.0, 0.5])


def test_suite_result_merges_two_harnesses_of_one_node_and_keeps_every_run():
    ctx = types.SimpleNamespace(args=types.SimpleNamespace(quick=True))
    recording = compute.Recording([(0.0, '/scan', 1), (2.0, '/amcl_pose', 2)], {}, {}, {})
    first, second = _entry('lost_and_found', 'timer'), _entry('lost_and_found', 'wander')
    runs = [{'particles': 500, 'rtf': 2.0, 'sim_s': 10.0, 'wall_s': 5.0, 'params': {'x': 1}},
            {'particles': 5000, 'error': 'timed out'}]
    recorded = {'rtf': 3.0, 'particles': 2000, 'min_particles': 500,
                'kidnap': {'success': True}, 'commands': ['roslaunch x']}
    out = compute.suite_result(ctx, {'cpu_count': 2, 'cpu_model': 'cpu',
                                     'load_average': [0.1, 0.1, 0.1]},
                               recorded, recording, [first, second], 120.0, runs, ['a.png'])
    assert set(out['summary']['callbacks']['lost_and_found']) == {'timer', 'wander'}
    assert out['summary']['rtf'] == {'500': 2.0, '5000': None}
    assert [t['kind'] for t in out['trials']] == ['callbacks', 'callbacks', 'rtf', 'rtf']
    assert 'params' not in out['trials'][2]
    assert out['plots'] == ['a.png'] and '## Real-time factor vs particle count' in \
        out['markdown']


def test_callbacks_markdown_says_once_what_rows_of_every_particle_count_cover():
    entries = [dict(_entry('sim_localizer (%d particles)' % n, 'scan'),
                    covers_label='sim_localizer (any particle count)') for n in (500, 5000)]
    text = compute.callbacks_markdown(entries, overhead_ns=None)
    assert text.count('what it covers') == 1
    assert '**sim_localizer (any particle count) / scan**' in text
    assert '| sim_localizer (5000 particles) | scan |' in text


def test_frozen_heap_hides_existing_objects_from_the_collector_and_restores_it():
    import gc
    kept = [[i] for i in range(1000)]
    with compute.frozen_heap():
        assert gc.get_freeze_count() >= len(kept)
    assert gc.get_freeze_count() == 0


def _tf(parent, child, t, yaw=0.0):
    """A tf2_msgs/TFMessage of one transform ``parent`` -> ``child`` at ``t`` (sim s): no
    translation, turned by ``yaw``."""
    import rospy
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage
    from lost_and_found.nodes.conversions import quaternion_from_yaw
    msg = TransformStamped()
    msg.header.frame_id, msg.child_frame_id = parent, child
    msg.header.stamp = rospy.Time.from_sec(t)
    msg.transform.rotation = quaternion_from_yaw(yaw)
    return TFMessage([msg])


def _turn_recording(tmp_path, lost_from=0.0, scans=60):
    """A recording of a robot turning in place (``scans`` scans at 10 a second, 72 deg/s: 60
    are a little more than one turn; the odometry exact), in a 10 x 6 m room with a wall half
    across it; LOST from ``lost_from`` s."""
    import rospy
    from sensor_msgs.msg import LaserScan
    from std_msgs.msg import String
    from lost_and_found.sim.gridmap import save_map
    from lost_and_found.sim.laser import cast_rays
    from test_bench_oracle import box_map
    grid = box_map(10.0, 6.0, walls=[(3.9, 0.0, 4.1, 3.5), (7.0, 4.0, 8.0, 5.0)])
    save_map(grid, str(tmp_path / 'room.yaml'))
    events = [(0.0, '/tf_static', _tf('base_footprint', 'laser', 0.0)),
              (0.0, '/lost_service/state', String('LOST' if lost_from <= 0.0 else 'NAVIGATING'))]
    angles = np.linspace(-0.5, 0.5, 160)
    for k in range(scans):
        t, yaw = 0.1 * (k + 1), 0.1 * (k + 1) * 2.0 * math.pi / 5.0
        if 0.0 < lost_from <= t and lost_from > t - 0.1:
            events.append((t, '/lost_service/state', String('LOST')))
        # odometry starts where the robot stands in the map: (2, 2), heading east
        events.append((t, '/tf', _tf('odom', 'base_footprint', t, yaw=yaw)))
        ranges = cast_rays(grid, 2.0, 2.0, yaw + angles, 6.0)
        scan = LaserScan(angle_min=-0.5, angle_max=0.5, angle_increment=1.0 / 159,
                         range_min=0.1, range_max=6.0,
                         ranges=[float(r) if r < 6.0 else float('inf') for r in ranges])
        scan.header.frame_id, scan.header.stamp = 'laser', rospy.Time.from_sec(t)
        events.append((t + 0.001, '/scan', scan))
    # partial_share pinned: the counts of matches the tests expect follow from it
    params = {'sim_localizer': {'map_file': str(tmp_path / 'room.yaml')},
              'panorama_localizer': {'min_points': 20, 'partial_share': 0.5}}
    return compute.Recording(events, params, {}, {})


@pytest.mark.parametrize('open_gate', [False, True])
def test_panorama_harnesses_time_the_scans_and_the_matches_they_start(tmp_path, open_gate):
    recording = _turn_recording(tmp_path, scans=100)
    sent = []

    class Kept(compute.NullPublisher):
        def publish(self, msg):
            sent.append(msg)
            super().publish(msg)
    harness = (compute.PanoramaOpenHarness if open_gate else compute.PanoramaHarness)(recording)
    harness.pub = Kept
    with compute.replay_environment() as (clock, log):
        watch, passes = compute.measure_harness(harness, recording.events, 100, 1, 60.0, clock)
    scans = watch.samples[harness.primary[0]]
    assert passes == 1 and len(scans) == 100
    # In 10 s of turning: a part at half the headings (1.6 s) fixes and is forgotten; the next
    # half (3.3 s) does not, nor its growth by partial_step (3.9, 4.4 s); at 5.0 s the second
    # fix spends the episode's two. Held LOST, a new episode then does it all again.
    matches = watch.samples[harness.match_series]
    assert len(matches) == (10 if open_gate else 5)
    assert harness.adapter._pub.count == (4 if open_gate else 2)
    # every fix (the warm-up pass's and the timed one's) right where the robot stands
    assert len(sent) == 2 * harness.adapter._pub.count
    for msg in sent:
        position = msg.pose.pose.position
        assert math.hypot(position.x - 2.0, position.y - 2.0) < 0.2
    assert log.counts.get('error', 0) == 0 and log.counts.get('warning', 0) == 0
    assert harness.buffer.missed == 0


def test_the_recorded_states_gate_the_panorama_harness(tmp_path):
    # LOST only for the last 0.5 s: too little of the turn for a match
    recording = _turn_recording(tmp_path, lost_from=5.55)
    harness = compute.PanoramaHarness(recording)
    with compute.replay_environment() as (clock, _log):
        watch, _passes = compute.measure_harness(harness, recording.events, 60, 1, 60.0, clock)
    assert len(watch.samples['scan']) == 60
    assert not watch.samples.get(harness.match_series)
    assert harness.adapter._pub.count == 0


def test_scan_hold_lets_scans_through_in_order_once_their_odometry_is_there():
    import rospy
    from sensor_msgs.msg import LaserScan
    buffer = compute._replay_buffer_class()(rospy.Duration(30.0))
    handled = []

    def tf(t, parent='odom', child='base'):
        return _tf(parent, child, t)

    def scan(t):
        msg = LaserScan()
        msg.header.stamp = rospy.Time.from_sec(t)
        return msg
    hold = compute.ScanHold(buffer, 'odom', 'base', lambda m: handled.append(
        m.header.stamp.to_sec()), skip=lambda tr: tr.header.frame_id == 'map')
    hold.on_tf(1.0, tf(1.0))
    hold.on_scan(1.0, scan(1.0))        # its odometry is there: at once
    hold.on_scan(1.1, scan(1.1))        # not yet (odometry up to 1.0)
    hold.on_scan(1.15, scan(1.15))      # behind it
    assert handled == [1.0]
    hold.on_tf(1.1, tf(1.1))            # completes the first held one only
    assert handled == [1.0, 1.1]
    hold.on_tf(1.2, tf(1.2, parent='map', child='odom'))   # skipped: not fed
    assert not buffer.can_transform_core('map', 'odom', rospy.Time.from_sec(1.2))[0]
    assert handled == [1.0, 1.1]
    # the node gives up waiting ODOM_WAIT s past the stamp: handled without its odometry
    hold.on_tf(1.15 + compute.ODOM_WAIT + 0.01, tf(1.05, parent='map', child='odom'))
    assert handled == pytest.approx([1.0, 1.1, 1.15]) and not hold.pending


def test_a_map_panorama_localizer_refuses_leaves_its_scans_timed_and_no_match(tmp_path):
    from lost_and_found.sim.gridmap import GridMap, save_map
    recording = _turn_recording(tmp_path)
    # the same file, now with no occupied cell: nothing to match returns against
    save_map(GridMap.from_occupancy(np.zeros((120, 200), dtype=bool), 0.05, (0.0, 0.0, 0.0)),
             str(tmp_path / 'room.yaml'))
    harness = compute.PanoramaOpenHarness(recording)
    with compute.replay_environment() as (clock, log):
        watch, _passes = compute.measure_harness(harness, recording.events, 60, 1, 60.0, clock)
    assert len(watch.samples[harness.primary[0]]) == 60
    assert not watch.samples.get(harness.match_series)
    assert log.counts.get('error', 0) >= 1 and 'no panorama fixes' in ' '.join(log.first)


def _pose_msg(t, x, y, yaw):
    """An amcl_pose at ``t`` (sim s): ``(x, y, yaw)`` with a tight covariance."""
    import rospy
    from geometry_msgs.msg import PoseWithCovarianceStamped
    from lost_and_found.nodes.conversions import quaternion_from_yaw
    msg = PoseWithCovarianceStamped()
    msg.header.frame_id, msg.header.stamp = 'map', rospy.Time.from_sec(t)
    msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
    msg.pose.pose.orientation = quaternion_from_yaw(yaw)
    covariance = [0.0] * 36
    covariance[0] = covariance[7] = 0.01
    covariance[35] = 0.005
    msg.pose.covariance = covariance
    return msg


def _detector_recording(tmp_path, scans=100, strip=True):
    """The turn of :func:`_turn_recording` with amcl's pose of each scan at its stamp (the
    true one: the robot at (2, 2), odometry starting there): most after their scan, every
    fourth before it (its classification then runs in the scan's callback). The graph ran
    lost_detector with its scan check and, with ``strip``, rule 9 (4 of 5, slack 0.3 m /
    0.2 rad)."""
    turn = _turn_recording(tmp_path, scans=scans)
    events = list(turn.events)
    for t, topic, msg in turn.events:
        if topic == '/scan':
            stamp = msg.header.stamp.to_sec()
            k = round(stamp * 10.0)
            yaw = stamp * 2.0 * math.pi / 5.0
            events.append((t - 0.0005 if k % 4 == 0 else t + 0.001,
                           '/amcl_pose', _pose_msg(stamp, 2.0, 2.0, yaw)))
    events.sort(key=lambda e: e[0])
    detector = {'scan_check/enabled': True}
    if strip:
        detector.update({'strip_check/count': 4, 'strip_check/slack_xy': 0.3,
                         'strip_check/slack_yaw': 0.2})
    params = dict(turn.params, lost_detector=detector)
    return compute.Recording(events, params, {}, {})


@pytest.mark.parametrize('strip, no_strip_harness', [(True, False), (True, True),
                                                     (False, False)])
def test_lost_detector_harnesses_feed_scans_tf_and_the_map(tmp_path, strip, no_strip_harness):
    recording = _detector_recording(tmp_path, strip=strip)
    harness = (compute.LostDetectorNoStripHarness if no_strip_harness else
               compute.LostDetectorHarness)(recording)
    with compute.replay_environment() as (clock, log):
        watch, passes = compute.measure_harness(harness, recording.events, 100, 1, 60.0, clock)
    poses, scans = (watch.samples[harness.pose_series], watch.samples[harness.scan_series])
    assert passes == 1 and len(poses) == 100 and len(scans) == 100
    node = harness.adapter
    # the scan check read every pose's scan at a right estimate: normal throughout
    assert node._checker.reason == '' and node._detector.tier.status == 'normal'
    assert node._detector.last_probability < 0.5
    searches = watch.samples.get(compute.LostDetectorHarness.search_series, [])
    if not strip or no_strip_harness:
        assert node._strip is None and not searches
    else:
        # the strip, placed by the recorded odometry, fits the map at the estimate; each
        # verdict of a strip with enough returns got one timed whole-map search
        score, best, _place = node._strip.last
        assert score > 0.8 and best is None
        assert 80 <= len(searches) < 100     # none while the strip has < 100 returns
    assert log.counts.get('warning', 0) == 0 and log.counts.get('error', 0) == 0


def test_without_the_scan_check_the_lost_detector_harness_feeds_no_scans(tmp_path):
    recording = _detector_recording(tmp_path, strip=False)
    recording.params['lost_detector'] = {'scan_check/enabled': False}
    harness = compute.LostDetectorHarness(recording)
    with compute.replay_environment() as (clock, log):
        watch, _passes = compute.measure_harness(harness, recording.events, 100, 1, 60.0, clock)
    # the node subscribes to no scan then: the replay times its poses alone
    assert len(watch.samples[harness.pose_series]) == 100
    assert not watch.samples.get(harness.scan_series)
    assert harness.adapter._checker is None and not hasattr(harness, '_built')
