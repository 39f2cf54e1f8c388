"""sim/scenario.py: the kidnap demo's decisions, timeline, figures and plot."""
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lost_and_found.core.config import ConfigError, config_from_params
from lost_and_found.sim.gridmap import GridMap
from lost_and_found.sim.scenario import DemoConfig, DemoScenario, Entry, Phase, Step, plot_demo

GOAL = (10.0, 0.0, 0.0)
KIDNAP = (2.0, 8.0, 1.57)


def make(**overrides):
    params = dict(map_file='m.yaml', goal=GOAL, kidnap_pose=KIDNAP, start_pose=(0.0, 0.0, 0.0),
                  time_budget=100.0)
    params.update(overrides)
    config = DemoConfig(**params)
    config.validate()
    return DemoScenario(config)


def drive_to(demo, t0, start, end, speed=0.5, dt=0.1):
    """Feed ground truth along a straight line; return (t, first Step that is not NOTHING)."""
    start, end = np.array(start, float), np.array(end, float)
    length = float(np.hypot(*(end - start)))
    t = t0
    for s in np.arange(0.0, length + 1e-9, speed * dt):
        x, y = start + (end - start) * (s / length)
        demo.on_ground_truth(t, x, y, 0.0)
        step = demo.step(t)
        if step != Step.NOTHING:
            return t, step
        t += dt
    return t, Step.NOTHING


def kidnap_and_find(demo, t):
    """Lift, put down, LOST, a fiducial fix, localized again, resume; returns the time."""
    demo.on_wheel_drop(t, 0, True)
    demo.on_wheel_drop(t + 0.01, 1, True)
    demo.on_state(t + 0.02, 'FLYING')
    demo.kidnap_result(t + 0.02, True, 'ok', KIDNAP)
    demo.on_ground_truth(t + 3.0, KIDNAP[0], KIDNAP[1], KIDNAP[2])
    demo.on_wheel_drop(t + 3.0, 0, False)
    demo.on_wheel_drop(t + 3.01, 1, False)         # put down at t + 3.01
    demo.on_state(t + 3.05, 'LOST')
    demo.on_initialpose(t + 3.1, 5.0, 0.0, 0.0, 0.5, '/lost_service')     # re-seed
    demo.on_goal(t + 6.0, 4.0, 1.0)                                       # spiral leg
    demo.on_initialpose(t + 9.01, 2.05, 8.0, 1.5, 0.1, '/fiducial_localizer')
    demo.on_state(t + 9.5, 'LOCALIZING')
    demo.on_state(t + 13.01, 'IDLE')
    demo.on_goal(t + 13.2, GOAL[0], GOAL[1])
    demo.on_state(t + 13.2, 'NAVIGATING')
    return t + 13.2


# ---------------------------------------------------------------------------- config

def test_config_needs_goal_and_kidnap_pose():
    with pytest.raises(ConfigError) as error:
        DemoConfig(map_file='m.yaml').validate()
    text = str(error.value)
    assert 'goal' in text and 'kidnap_pose' in text


def test_config_names_every_bad_value():
    with pytest.raises(ConfigError) as error:
        config_from_params(DemoConfig, {
            'map_file': 'm.yaml', 'goal': [1.0, 2.0], 'kidnap_pose': [0, 0, float('nan')],
            'kidnap_fraction': 1.0, 'goal_tolerance': 0.0, 'lost_error': 0.1,
            'start_pose': [1, 2, 3, 4]})
    problems = ' '.join(error.value.problems)
    for key in ('goal=', 'kidnap_pose=', 'kidnap_fraction=', 'goal_tolerance=',
                'lost_error=', 'start_pose='):
        assert key in problems, key


def test_config_from_ros_style_lists():
    config = config_from_params(DemoConfig, {'map_file': 'm.yaml', 'goal': [1, 2, 0],
                                             'kidnap_pose': [3.0, 4.0, 0.5]})
    assert config.goal == (1.0, 2.0, 0.0)
    assert config.start_pose == ()


# ---------------------------------------------------------------------------- timeline

def test_entry_format():
    line = Entry(12.345, 'LOST', 2, 'put down at (1.00, 2.00)').format()
    assert line == '[   12.3 sim s] LOST       2  put down at (1.00, 2.00)'
    assert Entry(0.0, None, None, 'x').format().startswith('[    0.0 sim s] -          -  x')


# ---------------------------------------------------------------------------- the run

def test_full_run_kidnaps_half_way_and_succeeds_at_the_goal():
    demo = make()
    demo.on_ground_truth(0.0, 0.0, 0.0, 0.0)
    demo.on_state(0.0, 'IDLE')
    demo.on_status(0.0, 0, 'LOCALIZATION_NORMAL')
    assert demo.step(0.0) == Step.NOTHING          # goal not sent yet
    demo.goal_sent(0.5)
    demo.on_state(0.6, 'NAVIGATING')
    t, step = drive_to(demo, 1.0, (0.0, 0.0), GOAL[:2])
    assert step == Step.KIDNAP
    assert demo.phase == Phase.KIDNAPPING
    assert demo.step(t) == Step.NOTHING             # only once
    assert 4.9 <= demo.times['kidnap_requested'] - 1.0 <= 10.1
    t = kidnap_and_find(demo, t)
    assert demo.lift is not None and abs(demo.lift[0] - 5.0) < 0.2
    assert demo.put_down == (2.0, 8.0)
    assert demo.phase == Phase.RECOVERING
    t, step = drive_to(demo, t, KIDNAP[:2], GOAL[:2])
    assert step == Step.NOTHING                     # at G, but the errand goes on
    demo.on_state(t, 'IDLE')                        # the package ends it: the robot stopped
    assert demo.step(t) == Step.FINISH
    assert demo.outcome.success and 'the robot stopped 0.01 m from G' in demo.outcome.reason
    put_down = demo.times['put_down']
    figures = demo.figures()
    assert figures['time_lost'] == pytest.approx(demo.times['recovered'] - put_down)
    assert figures['time_lost'] == pytest.approx(10.0, abs=1e-6)
    assert figures['time_to_relocalize'] == pytest.approx(6.0, abs=1e-6)
    assert figures['time_to_goal'] == pytest.approx(t - put_down, abs=1e-6)
    assert figures['search_legs'] == 1 and figures['fiducial_fixes'] == 1
    assert figures['kidnap_distance'] == pytest.approx(math.hypot(3.0, 8.0), abs=0.2)
    result = demo.result()
    assert result['success'] is True
    assert 'resumed' in result['times']
    events = [e.event for e in demo.timeline]
    order = ['goal G', 'half way', 'lifted', 'put down', 'state FLYING -> LOST',
             'search leg 1', 'fiducial fix', 'localized again', 'goal G re-sent', 'SUCCESS']
    positions = [next(i for i, e in enumerate(events) if e.startswith(o)) for o in order]
    assert positions == sorted(positions)
    assert all(re.match(r'^\[ *\d+\.\d sim s\] ', line) for line in result['timeline'])


def test_only_an_errand_ended_within_the_tolerance_is_success():
    demo = make()
    demo.on_ground_truth(0.0, 0.0, 0.0, 0.0)
    demo.goal_sent(0.0)
    demo.on_state(0.1, 'NAVIGATING')
    t, _ = drive_to(demo, 0.0, (0.0, 0.0), GOAL[:2])
    t = kidnap_and_find(demo, t)
    # The navigator ends the errand 1 m short of G (a wrong estimate): no success...
    t, _ = drive_to(demo, t, KIDNAP[:2], (GOAL[0] - 1.0, GOAL[1]))
    demo.on_state(t, 'IDLE')
    assert demo.step(t) == Step.NOTHING and demo.outcome is None
    # ...nor passing G while driving again; stopping there is.
    demo.on_state(t + 1.0, 'NAVIGATING')
    t, step = drive_to(demo, t + 1.0, (GOAL[0] - 1.0, GOAL[1]), GOAL[:2])
    assert step == Step.NOTHING
    demo.on_state(t + 0.5, 'IDLE')
    assert demo.step(t + 0.5) == Step.FINISH and demo.outcome.success


def test_reaching_the_goal_before_being_found_is_not_success():
    demo = make()
    demo.on_ground_truth(0.0, 0.0, 0.0, 0.0)
    demo.goal_sent(0.0)
    t, _ = drive_to(demo, 0.0, (0.0, 0.0), GOAL[:2])
    demo.on_wheel_drop(t, 0, True)
    demo.on_wheel_drop(t, 1, True)
    demo.on_wheel_drop(t + 3, 0, False)
    demo.on_wheel_drop(t + 3, 1, False)
    demo.on_state(t + 3, 'LOST')
    demo.on_ground_truth(t + 4, GOAL[0], GOAL[1], 0.0)   # put down on the goal, still LOST
    assert demo.step(t + 4) == Step.NOTHING
    assert demo.outcome is None


def test_time_budget_fails_and_says_what_was_missing():
    demo = make(time_budget=20.0)
    demo.on_ground_truth(0.0, 0.0, 0.0, 0.0)
    demo.goal_sent(0.0)
    assert demo.step(10.0) == Step.NOTHING
    assert demo.step(20.5) == Step.FINISH
    assert not demo.outcome.success
    assert 'never got half way' in demo.outcome.reason
    assert demo.result()['success'] is False
    assert demo.figures()['time_lost'] is None


def test_budget_after_put_down_reports_not_localized():
    demo = make(time_budget=30.0)
    demo.on_ground_truth(0.0, 0.0, 0.0, 0.0)
    demo.goal_sent(0.0)
    t, _ = drive_to(demo, 0.0, (0.0, 0.0), GOAL[:2])
    for wheel in (0, 1):
        demo.on_wheel_drop(t, wheel, True)
    demo.on_state(t, 'FLYING')
    demo.on_state(t + 3, 'LOST')       # put down known from the state alone
    assert demo.times['put_down'] == t + 3
    assert demo.step(31.0) == Step.FINISH
    assert 'still not localized' in demo.outcome.reason


def test_kidnap_refused_fails():
    demo = make()
    demo.on_ground_truth(0.0, 0.0, 0.0, 0.0)
    demo.goal_sent(0.0)
    demo.kidnap_result(1.0, False, 'robot is already lifted')
    assert demo.step(1.0) == Step.FINISH
    assert 'already lifted' in demo.outcome.reason


def test_give_up_ends_once():
    demo = make()
    demo.give_up(3.0, 'move_base died')
    demo.give_up(4.0, 'again')
    assert demo.outcome.reason == 'move_base died'
    assert demo.step(5.0) == Step.FINISH


def test_initialpose_sender_decides_fix_or_reseed():
    demo = make()
    demo.on_initialpose(1.0, 1.0, 2.0, 0.0, 0.1, '/fiducial_localizer')
    demo.on_initialpose(2.0, 1.0, 2.0, 0.0, 0.5, '/lost_service')
    demo.on_initialpose(3.0, 1.0, 2.0, 0.0, 0.5, '/ns/fiducial_localizer')
    assert len(demo.fixes) == 2 and len(demo.reseeds) == 1
    assert 'first_fix' not in demo.times        # no put-down yet


def test_estimate_error_events_have_hysteresis():
    demo = make()
    demo.on_ground_truth(0.0, 0.0, 0.0, 0.0)
    demo.on_estimate(0.1, 0.1, 0.0, 0.0)            # on
    demo.on_estimate(0.2, 2.0, 0.0, 0.0)            # off
    demo.on_estimate(0.3, 0.7, 0.0, 0.0)            # between: nothing
    demo.on_estimate(0.4, 3.0, 0.0, 0.0)            # still off: nothing
    demo.on_estimate(0.5, 0.2, 0.0, 0.0)            # back
    events = [e.event for e in demo.timeline]
    assert len(events) == 2
    assert 'off the truth' in events[0] and 'back on the truth' in events[1]


def test_saved_goal_and_detector_log_changes_only():
    demo = make()
    demo.on_saved_goal(1.0, True, 10.0, 0.0)
    demo.on_saved_goal(1.5, True, 10.0, 0.0)
    demo.on_saved_goal(2.0, False)
    demo.on_detector(2.0, 'normal')
    demo.on_detector(2.1, 'normal')
    demo.on_detector(2.2, 'lost')
    events = [e.event for e in demo.timeline]
    assert events == ['saved goal (10.00, 0.00)', 'saved goal cleared', 'lost_detector: normal',
                      'lost_detector: lost']


def test_bad_inputs_are_skipped():
    demo = make()
    demo.on_ground_truth(5.0, 1.0, 1.0, 0.0)
    demo.on_ground_truth(6.0, float('nan'), 1.0, 0.0)
    demo.on_ground_truth(float('inf'), 2.0, 1.0, 0.0)
    demo.on_ground_truth(1.0, 3.0, 3.0, 0.0)        # the clock went back: ignored
    demo.on_estimate(7.0, 1.0, float('inf'), 0.0)
    demo.on_goal(7.0, float('nan'), 0.0)
    true, estimate = demo.paths()
    assert true[:, 1:].tolist() == [[1.0, 1.0]]
    assert len(estimate) == 0 and demo.legs == []


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(-1e3, 1e3), st.floats(-50, 50), st.floats(-50, 50)),
                max_size=30))
def test_paths_never_crash_and_break_at_jumps(points):
    demo = make()
    for t, x, y in sorted(points):
        demo.on_ground_truth(t, x, y, 0.0)
    true, _ = demo.paths()
    finite = true[~np.isnan(true[:, 1])]
    steps = np.hypot(np.diff(true[:, 1]), np.diff(true[:, 2]))
    # No drawn segment is longer than a jump: NaN rows separate them.
    assert np.all(np.isnan(steps) | (steps <= 1.0 + 1e-9))
    assert len(finite) <= len(points)


# ---------------------------------------------------------------------------- plot

def test_plot_writes_a_png(tmp_path):
    demo = make()
    demo.on_ground_truth(0.0, 0.0, 0.0, 0.0)
    demo.goal_sent(0.0)
    t, _ = drive_to(demo, 0.0, (0.0, 0.0), GOAL[:2])
    t = kidnap_and_find(demo, t)
    demo.on_estimate(t, 2.1, 8.0, 0.0)
    drive_to(demo, t, KIDNAP[:2], GOAL[:2])
    occupied = np.zeros((60, 60), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    grid = GridMap.from_occupancy(occupied, 0.2, (-1.0, -1.0, 0.0))
    tag = np.eye(4)
    tag[:3, 3] = (2.0, 9.0, 0.4)
    path = tmp_path / 'demo.png'
    plot_demo(str(path), demo, grid=grid, tags={1: tag})
    data = path.read_bytes()
    assert data[:8] == b'\x89PNG\r\n\x1a\n' and len(data) > 10000


def test_plot_without_data(tmp_path):
    path = tmp_path / 'empty.png'
    plot_demo(str(path), make(start_pose=()))
    assert path.stat().st_size > 0


# ---------------------------------------------------------------------------- adapter helpers

def test_adapter_conversions():
    from geometry_msgs.msg import PoseWithCovarianceStamped
    from lost_and_found.nodes import demo_scenario as node

    goal = node.goal_msg((1.0, 2.0, math.pi / 2), 'map', None)
    assert goal.target_pose.header.frame_id == 'map'
    assert node.pose_of(goal.target_pose.pose) == pytest.approx((1.0, 2.0, math.pi / 2))
    request = node.kidnap_request((3.0, 4.0, -1.0), 3.0)
    assert (request.pose.x, request.pose.y, request.pose.theta) == (3.0, 4.0, -1.0)
    assert request.random is False and request.hold == 3.0
    covariance = [0.0] * 36
    covariance[0], covariance[7], covariance[1] = 0.25, 0.01, 0.0
    assert node.sigma_xy(covariance) == pytest.approx(0.5)
    msg = PoseWithCovarianceStamped()
    assert node.callerid(msg) == ''
    msg._connection_header = {'callerid': '/fiducial_localizer'}
    assert node.callerid(msg) == '/fiducial_localizer'


# ---------------------------------------------------------------------------- launch files

def _launch(name):
    import os
    import xml.etree.ElementTree as ElementTree
    root = os.path.join(os.path.dirname(__file__), '..', '..')
    return ElementTree.parse(os.path.join(root, 'launch', name)).getroot()


def test_sim_launch_uses_sim_time_and_loads_the_scenario_last():
    launch = _launch('sim.launch')
    args = {a.get('name'): a.get('default') for a in launch.iter('arg')}
    for name in ('map', 'map_file', 'fiducial_map', 'sim_params', 'speed', 'particles',
                 'seed'):
        assert name in args, name
    assert args['map'] == 'office'
    params = {p.get('name'): p.get('value') for p in launch.findall('param')}
    assert params['/use_sim_time'] == 'true'
    nodes = {n.get('type') for n in launch.iter('node')}
    assert nodes == {'sim_world', 'sim_localizer', 'sim_navigator'}
    assert launch[-1].tag == 'rosparam' and launch[-1].get('file') == '$(arg sim_params)'


def test_demo_launch_includes_both_and_ends_with_the_scenario():
    launch = _launch('demo.launch')
    includes = {i.get('file').rsplit('/', 1)[-1]: i for i in launch.iter('include')}
    assert set(includes) == {'sim.launch', 'lost_and_found.launch'}
    package = {a.get('name'): a.get('value') for a in includes['lost_and_found.launch']}
    assert package['cmd_vel_topic'] == 'cmd_vel'
    assert package['amcl_pose_topic'] == 'amcl_pose'
    assert package['fiducial_map'] == '$(arg fiducial_map)'
    assert package['base_frame'] == 'base_footprint'
    nodes = list(launch.iter('node'))
    assert [n.get('type') for n in nodes] == ['demo_scenario']
    assert nodes[0].get('required') == 'true'


def test_repeated_fiducial_fixes_are_summarised():
    demo = make()
    demo.on_state(0.5, 'LOCALIZING')
    for i in range(5):
        demo.on_initialpose(1.0 + i, 1.0, 2.0, 0.0, 0.1, '/fiducial_localizer')
    assert len(demo.timeline) == 2 and len(demo.fixes) == 5
    demo.on_state(7.0, 'IDLE')
    demo.timeline.pop(0)
    events = [(e.t, e.event) for e in demo.timeline]
    assert events[1] == (5.0, '4 more fiducial fixes, the last at 5.0 s')
    assert demo.timeline[1].state == 'LOCALIZING'      # the state while they came
    assert events[2] == (7.0, 'state LOCALIZING -> IDLE')
    demo.on_initialpose(8.0, 1.0, 2.0, 0.0, 0.1, '/fiducial_localizer')
    demo.on_state(9.0, 'LOST')
    assert [e.event.split()[0] for e in demo.timeline[3:]] == ['fiducial', 'state']
