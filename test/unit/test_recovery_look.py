"""RecoveryCore's look before resuming: a localization on the localizer's word alone is first
shown a tag (fiducial_localizer's viewpoint), then the saved goal is resumed."""
import pytest

from lost_and_found.core.config import ConfigError
from lost_and_found.core.recovery import ABORTED, PREEMPTED, SUCCEEDED, Command, Phase, \
    RecoveryConfig
from lost_and_found.nodes import lost_and_found as nodes
from lost_and_found.state import State
from test_recovery import GOAL, Runner, make_core, user_goal_then_lost

VIEW = (3.0, 1.5, -0.5)


def localized_without_a_tag(**overrides):
    """A core with the look on, LOST with GOAL saved, then IDLE (the localizer alone): returns
    (core, runner, the command of the step after the localization)."""
    core = make_core(look_before_resume=True, **overrides)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.run(2.0)
    core.on_state(State.IDLE, runner.t)
    return core, runner, runner.step()


def go_to_view(core, runner):
    """Answer the viewpoint request with VIEW; return the command that sends the goal."""
    core.on_viewpoint(VIEW, 'tag 3 in view', runner.t)
    return runner.step()


def look_at_stage(stage):
    """(core, runner) of a look in ``stage``: 'ask' (no answer yet), 'go' (driving to VIEW)
    or 'stand' (there)."""
    core, runner, _ = localized_without_a_tag()
    if stage != 'ask':
        command = go_to_view(core, runner)
    if stage == 'stand':
        core.on_goal_done(SUCCEEDED, True, runner.t, command.goal_tag)
        runner.step()
    return core, runner


def test_off_by_default_the_goal_is_resumed_at_once():
    core = make_core()
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.run(2.0)
    core.on_state(State.IDLE, runner.t)
    command = runner.step()
    assert command.resend_saved_goal and not command.find_viewpoint


def test_the_look_asks_drives_stands_then_resumes():
    core, runner, command = localized_without_a_tag()
    assert command.find_viewpoint and command.twist == (0.0, 0.0)
    assert not command.resend_saved_goal and command.request_state is None
    assert core.phase == Phase.LOOK
    command = go_to_view(core, runner)
    assert command.send_goal == VIEW and command.goal_frame == 'map'
    assert command.goal_tag.startswith('look-')
    # Driving there: nothing resumed while move_base works on it.
    assert not any(c.resend_saved_goal for c in runner.run(10.0))
    core.on_goal_done(SUCCEEDED, True, runner.t, command.goal_tag)
    arrived = runner.t
    resumed = runner.until(lambda c: c.resend_saved_goal)
    assert runner.t - arrived == pytest.approx(core.config.look_dwell, abs=0.15)
    assert resumed.request_state == State.NAVIGATING and not resumed.cancel
    assert core.phase == Phase.IDLE and core.saved_goal == GOAL


def test_a_tag_fix_needs_no_look():
    core = make_core(look_before_resume=True)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.run(2.0)
    core.on_state(State.LOCALIZING, runner.t)
    runner.run(1.0)
    core.on_state(State.IDLE, runner.t)
    command = runner.step()
    assert command.resend_saved_goal and not command.find_viewpoint


@pytest.mark.parametrize('why', ['docked', 'move_base down'])
def test_no_look_on_the_dock_or_without_move_base(why):
    core = make_core(look_before_resume=True)
    if why == 'docked':
        core.on_dock(True)
    else:
        core.on_move_base_available(False)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    core.on_state(State.IDLE, runner.t)
    command = runner.step()
    if why != 'docked':     # the goal waits for move_base (a goal sent to none is lost)
        assert not command.resend_saved_goal and not command.find_viewpoint
        core.on_move_base_available(True)
        command = runner.step()
    assert command.resend_saved_goal and not command.find_viewpoint


@pytest.mark.parametrize('answer', [None, (float('nan'), 1.0, 0.0)])
def test_no_viewpoint_resumes_at_once(answer):
    core, runner, _ = localized_without_a_tag()
    core.on_viewpoint(answer, 'the tag check is off', runner.t)
    command = runner.step()
    assert command.resend_saved_goal and command.send_goal is None
    assert core.phase == Phase.IDLE


def test_a_refutation_during_the_look_starts_a_new_search_and_keeps_the_goal():
    core, runner, _ = localized_without_a_tag()
    go_to_view(core, runner)
    runner.run(2.0)
    core.on_state(State.LOST, runner.t)              # the tag check refuted the estimate
    command = runner.step()
    assert command.cancel and not command.resend_saved_goal
    assert core.phase == Phase.SPIN and core.saved_goal == GOAL
    # Localized again on the localizer's word: another look.
    runner.run(2.0)
    core.on_state(State.IDLE, runner.t)
    assert runner.step().find_viewpoint


def test_a_way_move_base_cannot_drive_ends_the_look():
    core, runner, _ = localized_without_a_tag()
    command = go_to_view(core, runner)
    core.on_goal_done(ABORTED, True, runner.t, command.goal_tag)
    command = runner.step()
    assert command.resend_saved_goal and not command.cancel


def test_the_look_times_out_while_asking_or_driving():
    core, runner, _ = localized_without_a_tag(look_timeout=10.0)
    start = runner.t
    resumed = runner.until(lambda c: c.resend_saved_goal)
    assert runner.t - start == pytest.approx(10.0, abs=0.15) and not resumed.cancel
    core, runner, _ = localized_without_a_tag(look_timeout=10.0)
    go_to_view(core, runner)
    resumed = runner.until(lambda c: c.resend_saved_goal)
    assert resumed.cancel                            # the way to the viewpoint is cancelled


def test_a_late_viewpoint_answer_is_ignored():
    core, runner, _ = localized_without_a_tag(look_timeout=5.0)
    runner.until(lambda c: c.resend_saved_goal)
    core.on_viewpoint(VIEW, 'late', runner.t)
    assert all(c.send_goal is None for c in runner.run(1.0))


@pytest.mark.parametrize('stage', ['ask', 'go', 'stand'])
def test_a_user_goal_during_the_look_ends_it_without_a_resend(stage):
    core, runner = look_at_stage(stage)
    other = GOAL.__class__('map', -3.0, 2.0, goal_id='/rviz-2-20.0')
    core.on_user_goal(other, runner.t)
    command = runner.step()
    assert command.cancel == (stage == 'go')         # only the way to the viewpoint is ours
    assert command.request_state == State.NAVIGATING and command.twist is None
    assert core.phase == Phase.IDLE and core.saved_goal == other
    later = runner.run(60.0)
    assert not any(c.resend_saved_goal or c.send_goal for c in later)


def test_someone_else_preempting_the_way_keeps_the_goal_without_a_resend():
    # move_base took a new user goal, whose callback has not arrived yet.
    core, runner, _ = localized_without_a_tag()
    command = go_to_view(core, runner)
    core.on_goal_done(PREEMPTED, True, runner.t, command.goal_tag)
    command = runner.step()
    assert not command.resend_saved_goal and not command.cancel
    assert core.phase == Phase.IDLE and core.saved_goal == GOAL
    assert not any(c.resend_saved_goal for c in runner.run(60.0))


@pytest.mark.parametrize('stage', ['ask', 'go', 'stand'])
def test_docking_during_the_look_ends_it(stage):
    core, runner = look_at_stage(stage)
    core.on_dock(True)
    command = runner.step()
    assert command.cancel == (stage == 'go') and command.resend_saved_goal
    assert core.phase == Phase.IDLE


def test_an_answer_in_the_period_the_look_times_out_sends_nothing():
    core, runner, _ = localized_without_a_tag(look_timeout=5.0)
    runner.run(4.9 - 0.1)
    core.on_viewpoint(VIEW, 'just in time', runner.t)
    commands = runner.run(0.3)
    assert not any(c.send_goal for c in commands)
    resumed = [c for c in commands if c.resend_saved_goal]
    assert len(resumed) == 1 and not resumed[0].cancel


def test_lost_before_the_look_goal_went_out_sends_and_cancels_nothing():
    core, runner, _ = localized_without_a_tag()
    core.on_viewpoint(VIEW, 'tag 3 in view', runner.t)
    core.on_state(State.LOST, runner.t)              # in the same control period
    command = runner.step()
    assert command.send_goal is None and not command.cancel
    assert core.phase == Phase.SPIN


def test_the_clock_jumping_back_keeps_what_remains_of_the_stand():
    core, runner, _ = localized_without_a_tag(look_dwell=3.0)
    command = go_to_view(core, runner)
    core.on_goal_done(SUCCEEDED, True, runner.t, command.goal_tag)
    runner.run(1.0)
    runner.t -= 100.0            # the clock jumps back: 2 s of the stand remain
    jumped = runner.t
    runner.until(lambda c: c.resend_saved_goal, limit=10.0)
    assert runner.t - jumped == pytest.approx(2.0, abs=0.25)


def test_shutdown_during_the_way_cancels_it():
    core, runner, _ = localized_without_a_tag()
    go_to_view(core, runner)
    assert core.shutdown().cancel


@pytest.mark.parametrize('params, key', [
    ({'look_before_resume': 'yes'}, 'look_before_resume'),
    ({'look_timeout': 0.0}, 'look_timeout'),
    ({'look_dwell': -1.0}, 'look_dwell'),
    ({'viewpoint_service': ''}, 'viewpoint_service'),
    ({'look_dwell': 50.0}, 'look_dwell'),
])
def test_bad_look_config_is_named(params, key):
    with pytest.raises(ConfigError) as error:
        RecoveryConfig(**params).validate()
    assert key in str(error.value)


class _Viewpoints:
    """Stands in for the rospy.ServiceProxy of fiducial_localizer's viewpoint service."""

    resolved_name = '/fiducial_localizer/viewpoint'

    def __init__(self, answer=None, frame='map'):
        """Answer with a viewpoint at ``answer`` = (x, y, yaw) in ``frame``, or none."""
        from lost_and_found.srv import GetViewpointResponse
        from lost_and_found.nodes.conversions import quaternion_from_yaw
        self.response = GetViewpointResponse(found=answer is not None, message='because')
        if answer is not None:
            self.response.pose.header.frame_id = frame
            self.response.pose.pose.position.x, self.response.pose.pose.position.y = answer[:2]
            self.response.pose.pose.orientation = quaternion_from_yaw(answer[2])

    def wait_for_service(self, timeout):
        """Always there."""

    def __call__(self):
        """The answer."""
        return self.response


@pytest.mark.parametrize('service, expected', [
    (_Viewpoints(VIEW), VIEW),
    (_Viewpoints(), None),
    (_Viewpoints(VIEW, frame='odom'), None),
])
def test_adapter_hands_the_viewpoint_answer_to_the_core(monkeypatch, service, expected):
    import rospy
    monkeypatch.setattr(rospy, 'get_time', lambda: 5.0)
    monkeypatch.setattr(rospy.Time, 'now', staticmethod(lambda: rospy.Time(5)))
    answers = []
    core, runner, _ = localized_without_a_tag()
    monkeypatch.setattr(core, 'on_viewpoint', lambda view, why, t: answers.append(view))
    node = nodes.RecoveryNode(core, core.config)
    node._saved_pub = _NullPublisher()
    node._viewpoint = service
    node._execute(Command(find_viewpoint=True))
    node._requests.get_nowait()()                  # the worker's call
    assert len(answers) == 1
    assert answers[0] == (pytest.approx(expected) if expected else None)


def test_adapter_without_the_service_answers_none(monkeypatch):
    import rospy
    from test_recovery import _FailingService
    monkeypatch.setattr(rospy, 'get_time', lambda: 5.0)
    monkeypatch.setattr(rospy.Time, 'now', staticmethod(lambda: rospy.Time(5)))
    answers = []
    core, runner, _ = localized_without_a_tag()
    monkeypatch.setattr(core, 'on_viewpoint', lambda view, why, t: answers.append((view, why)))
    node = nodes.RecoveryNode(core, core.config)
    node._saved_pub = _NullPublisher()
    failing = _FailingService()
    failing.resolved_name = '/fiducial_localizer/viewpoint'
    node._viewpoint = failing
    node._find_viewpoint()
    assert answers[0][0] is None and 'no answer' in answers[0][1]


class _NullPublisher:
    """Swallows what is published."""

    def publish(self, msg):
        """Nothing."""
