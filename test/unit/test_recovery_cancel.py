"""RecoveryCore: a user's cancel on ``move_base/cancel`` forgets the saved goal while move_base
does not hold it (no PREEMPTED would come to say so)."""
import dataclasses
import logging
import math

import pytest

from lost_and_found.core.recovery import ABORTED, PREEMPTED, RECALLED, SUCCEEDED, Phase
from lost_and_found.state import State
from test_recovery import GOAL, Runner, make_core, resumed, user_goal_then_lost
from test_recovery_look import look_at_stage
from test_recovery_step import drive, step_core

ALL = ('', 0.0)                   # actionlib: every goal
BY_ID = (GOAL.goal_id, 0.0)       # the saved goal's own id
FIRST = dataclasses.replace(GOAL, goal_id='', x=1.0)     # two rviz goals: no id
SECOND = dataclasses.replace(GOAL, goal_id='', x=2.0)


def driving(t=0.0):
    """A core whose user goal GOAL (sent at ``t``) move_base drives, NAVIGATING; its runner."""
    core = make_core()
    runner = Runner(core, t=t)
    core.on_user_goal(GOAL, runner.t)
    runner.step()
    core.on_state(State.NAVIGATING, runner.t)
    return core, runner


def lost_with_goal():
    """A core searching (LOST) with GOAL saved; its runner, a few steps into the search."""
    core = make_core()
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.run(1.0)
    return core, runner


@pytest.mark.parametrize('cancel', [ALL, BY_ID], ids=['all', 'by-id'])
def test_a_cancel_while_lost_forgets_the_goal_and_the_search_goes_on(cancel, caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core, runner = lost_with_goal()
    phase = core.phase
    core.on_user_cancel(*cancel, runner.t)
    assert core.saved_goal is None and core.phase == phase
    assert 'the user cancelled the saved goal (5.00, 4.00) while the robot is LOST: ' \
           'forgetting it; the search goes on' in caplog.text
    command = runner.step()
    assert command.twist is not None and command.request_state is None
    # Localized again: nothing to resume, so nothing is sent and NAVIGATING is not asked for.
    core.on_state(State.IDLE, runner.t)
    runner.run(5.0)
    assert not any(c.resend_saved_goal or c.request_state for when, c in runner.log
                   if when > runner.t - 5.0)


@pytest.mark.parametrize('cancel', [
    ('/rviz-7-70.0', 0.0),          # another goal's id
    ('', 0.5),                      # every goal stamped up to 0.5 s: GOAL came ...
], ids=['other-id', 'stamped-before'])
def test_a_cancel_that_does_not_take_in_the_goal_keeps_it(cancel):
    core, runner = driving(t=1.0)               # ... here at 1.0 s
    core.on_state(State.LOST, runner.t)
    runner.run(1.0)
    core.on_user_cancel(*cancel, runner.t)
    assert core.saved_goal == GOAL
    core.on_state(State.IDLE, runner.t)
    assert runner.step().resend_saved_goal


def test_a_cancel_stamped_after_the_goal_takes_it_in_whatever_its_id():
    core, runner = lost_with_goal()                 # GOAL came at 0.0 s
    core.on_user_cancel('/someone-else-1-1.0', 1.0, runner.t)
    assert core.saved_goal is None


def test_the_goals_own_stamp_stands_for_when_it_came():
    core = make_core()
    runner = Runner(core, t=10.0)
    core.on_user_goal(GOAL, runner.t, stamp=4.0)    # stamped 4 s, seen at 10 s
    runner.step()
    core.on_state(State.LOST, runner.t)
    core.on_user_cancel('', 3.9, runner.t)
    assert core.saved_goal == GOAL
    core.on_user_cancel('', 4.0, runner.t)          # at or before: taken in
    assert core.saved_goal is None


def test_while_move_base_drives_the_goal_its_preempted_decides():
    core, runner = driving()
    core.on_user_cancel(*ALL, runner.t)
    assert core.saved_goal == GOAL and runner.step().request_state is None
    core.on_goal_done(PREEMPTED, False, runner.t, GOAL.goal_id)
    assert core.saved_goal is None
    assert runner.step().request_state == State.IDLE


@pytest.mark.parametrize('cancel', [ALL, BY_ID], ids=['all', 'by-the-users-id'])
@pytest.mark.parametrize('lifted', [False, True], ids=['put-down', 'in-the-air'])
def test_our_re_send_at_move_base_is_cancelled_and_the_goal_forgotten(cancel, lifted):
    # Our re-send drives under our own id: a cancel naming the user's id does not reach it
    # at move_base, so the node cancels it (also with the robot in the air, where move_base
    # keeps it).
    core = make_core(check_arrival=False)
    runner = Runner(core)
    resumed(core, runner)
    if lifted:
        core.on_state(State.FLYING, runner.t)
        runner.step()
    core.on_user_cancel(*cancel, runner.t)
    assert core.saved_goal is None
    assert runner.step().cancel
    core.on_goal_done(PREEMPTED, True, runner.t)    # its end: nothing more to do
    assert core.saved_goal is None
    if lifted:      # a short lift: IDLE follows (the goal ended in the air), nothing re-sent
        core.on_state(State.NAVIGATING, runner.t)
        command = runner.step()
        assert command.request_state == State.IDLE and not command.resend_saved_goal


def test_a_goal_sent_in_the_air_is_sent_again_after_a_short_lift_unless_cancelled():
    for cancelled in (False, True):
        core = make_core()
        runner = Runner(core)
        core.on_state(State.FLYING, runner.t)
        core.on_user_goal(GOAL, runner.t)
        assert runner.step().cancel_user == GOAL.goal_id
        if cancelled:
            core.on_user_cancel(*ALL, runner.t)
        core.on_state(State.IDLE, runner.t)     # put down: a short lift, no episode
        command = runner.step()
        assert command.resend_saved_goal != cancelled
        assert (command.request_state == State.NAVIGATING) != cancelled


def test_a_goal_kept_after_move_base_aborted_it_is_forgotten(caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core, runner = driving()
    core.on_goal_done(ABORTED, False, runner.t, GOAL.goal_id)
    assert runner.step().request_state == State.IDLE and core.saved_goal == GOAL
    core.on_state(State.IDLE, runner.t)
    core.on_user_cancel(*BY_ID, runner.t)
    assert core.saved_goal is None
    assert 'while kept after move_base aborted it: forgetting it' in caplog.text
    # A later episode has nothing to resume.
    core.on_state(State.LOST, runner.t)
    runner.run(1.0)
    core.on_state(State.IDLE, runner.t)
    runner.run(2.0)
    assert not any(c.resend_saved_goal for _, c in runner.log)


def test_a_cancel_during_the_wait_before_a_re_send_forgets_the_goal():
    core = make_core(resume_retries=2, resume_retry_delay=5.0, max_doubts=0,
                     resume_step_distance=0.0)
    runner = Runner(core)
    resumed(core, runner)
    core.on_goal_done(ABORTED, True, runner.t)
    runner.run(1.0)
    core.on_user_cancel(*ALL, runner.t)
    assert core.saved_goal is None
    assert runner.step().request_state == State.IDLE
    done = len(runner.log)
    runner.run(10.0)
    assert not any(c.resend_saved_goal for _, c in runner.log[done:])


def test_a_cancel_during_the_step_stops_it_and_forgets_the_goal(caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core, runner = step_core()
    core.on_goal_done(ABORTED, True, runner.t)
    drive(core, runner, 0.1, 0.5)
    assert core.phase == Phase.STEP
    core.on_user_cancel(*ALL, runner.t)
    assert core.phase == Phase.IDLE and core.saved_goal is None
    assert 'while stepping out before sending it again: forgetting it' in caplog.text
    commands = drive(core, runner, 0.0, 8.0)
    assert commands[0].twist == (0.0, 0.0) and commands[0].request_state == State.IDLE
    assert not any(c.resend_saved_goal for c in commands)
    assert all(c.twist is None for c in commands[1:])


@pytest.mark.parametrize('stage', ['ask', 'go', 'stand'])
def test_the_look_goes_on_after_a_cancel_and_nothing_is_resumed(stage):
    core, runner = look_at_stage(stage)
    core.on_user_cancel(*BY_ID, runner.t)
    assert core.phase == Phase.LOOK and core.saved_goal is None
    assert not runner.step().cancel
    done = len(runner.log)
    runner.until(lambda c: core.phase == Phase.IDLE, limit=core.config.look_timeout + 1.0)
    assert not any(c.resend_saved_goal or c.request_state for _, c in runner.log[done:])


def test_an_episode_whose_goal_was_cancelled_still_looks_before_it_ends():
    core = make_core(look_before_resume=True)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.run(1.0)
    core.on_user_cancel(*ALL, runner.t)
    core.on_state(State.IDLE, runner.t)
    assert runner.step().find_viewpoint and core.phase == Phase.LOOK


def test_a_cancel_during_the_turn_at_the_reached_goal_stops_it():
    core = make_core()
    runner = Runner(core)
    resumed(core, runner)
    runner.run(10.0)
    core.on_goal_done(SUCCEEDED, True, runner.t)
    runner.step()
    assert core.phase == Phase.CHECK
    core.on_user_cancel(*ALL, runner.t)
    assert core.phase == Phase.IDLE and core.saved_goal is None
    command = runner.step()
    assert command.twist == (0.0, 0.0) and command.request_state == State.IDLE


def test_a_re_send_due_in_this_step_does_not_go_out_after_a_cancel():
    core = make_core()
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.run(2.0)
    core.on_state(State.IDLE, runner.t)     # queues the re-send for the next step
    core.on_user_cancel(*ALL, runner.t)
    command = runner.step()
    assert not command.resend_saved_goal and not command.goal_tag
    assert command.request_state is None        # nor NAVIGATING asked for
    assert core.saved_goal is None


def test_the_goals_time_moves_with_a_clock_that_jumps_back():
    core = make_core()
    runner = Runner(core, t=200.0)
    user_goal_then_lost(core, runner)       # GOAL saved at 200 s
    runner.run(1.0)
    core.on_state(State.LOST, runner.t - 100.0)     # the clock jumps back 100 s
    # Shifted with the clock, GOAL came at 100 s: a cancel stamped 100.5 s takes it in.
    core.on_user_cancel('', 100.5, runner.t - 99.9)
    assert core.saved_goal is None


@pytest.mark.parametrize('cancel', [('', math.nan), ('', math.inf), (None, 0.0)])
def test_a_bad_cancel_is_skipped_with_a_warning_and_the_goal_kept(cancel, caplog):
    core, runner = lost_with_goal()
    core.on_user_cancel(*cancel, runner.t)
    assert core.saved_goal == GOAL
    assert 'ignoring a cancel' in caplog.text


def test_a_new_goal_after_a_stamped_cancel_is_kept():
    core, runner = lost_with_goal()
    cancel_stamp = runner.t
    runner.run(0.5)
    newer = dataclasses.replace(GOAL, x=-3.0, goal_id='/rviz-2-20.0')
    core.on_user_goal(newer, runner.t)
    core.on_user_cancel('', cancel_stamp, runner.t)     # the cancel arrives late
    assert core.saved_goal == newer


def adapter(monkeypatch):
    """(the node module, rospy, a core, its RecoveryNode) at a fixed clock of 5 s (no master);
    the node's ~saved_goal publisher records."""
    nodes = pytest.importorskip('lost_and_found.nodes.lost_and_found')
    import rospy
    from test_recovery import _Recorder
    monkeypatch.setattr(rospy, 'get_time', lambda: 5.0)
    monkeypatch.setattr(rospy.Time, 'now', staticmethod(lambda: rospy.Time(5)))
    core = make_core()
    node = nodes.RecoveryNode(core, core.config)
    node._saved_pub = _Recorder()
    return nodes, rospy, core, node


def test_the_adapter_hands_on_cancels_but_not_its_own_and_passes_the_goals_stamp(monkeypatch):
    from actionlib_msgs.msg import GoalID
    from move_base_msgs.msg import MoveBaseActionGoal
    nodes, rospy, core, node = adapter(monkeypatch)
    user = MoveBaseActionGoal()
    user.goal.target_pose = nodes.pose_stamped_from_goal(GOAL, rospy.Time(1))
    user.goal_id.id, user.goal_id.stamp = GOAL.goal_id, rospy.Time(2)
    user._connection_header = {'callerid': '/rviz'}
    node._on_action_goal(user)
    core.on_state(State.LOST, 5.0)
    own = GoalID(stamp=rospy.Time(5), id='')        # our own cancel of everything up to now
    own._connection_header = {'callerid': rospy.get_name()}
    node._on_cancel(own)
    assert core.saved_goal is not None
    theirs = GoalID(stamp=rospy.Time(1), id='')     # up to 1 s: the goal is stamped 2 s
    theirs._connection_header = {'callerid': '/rqt'}
    node._on_cancel(theirs)
    assert core.saved_goal is not None
    theirs.stamp = rospy.Time(2)
    node._on_cancel(theirs)
    assert core.saved_goal is None
    assert node._saved_pub.sent[-1].header.frame_id == ''


def test_a_cancel_of_a_goal_sent_in_the_air_leaves_nothing_to_drive_after_a_short_lift():
    core, runner = driving()
    core.on_state(State.FLYING, runner.t)
    runner.step()
    newer = dataclasses.replace(GOAL, x=-3.0, goal_id='/rviz-2-20.0')
    core.on_user_goal(newer, runner.t)                  # sent in the air: cancelled, kept
    runner.step()
    core.on_goal_done(PREEMPTED, False, runner.t, newer.goal_id)
    core.on_user_cancel(*ALL, runner.t)
    assert core.saved_goal is None
    core.on_state(State.NAVIGATING, runner.t)           # put down: back to NAVIGATING
    command = runner.step()
    assert command.request_state == State.IDLE and not command.resend_saved_goal


def test_a_cancel_in_the_air_of_the_goal_move_base_still_holds_forgets_it():
    # Lifted, move_base's PREEMPTED of the user's goal counts as the node's own: the cancel
    # itself must say it was the user's.
    core, runner = driving()
    core.on_state(State.FLYING, runner.t)
    runner.step()
    core.on_user_cancel(*ALL, runner.t)
    core.on_goal_done(PREEMPTED, False, runner.t, GOAL.goal_id)
    assert core.saved_goal is None
    core.on_state(State.LOST, runner.t)                 # a kidnap after all: nothing to resume
    runner.run(1.0)
    core.on_state(State.IDLE, runner.t)
    assert not runner.step().resend_saved_goal


def test_a_goal_that_went_to_no_move_base_is_forgotten_on_a_cancel():
    for down_before in (True, False):
        core = make_core()
        runner = Runner(core)
        if down_before:
            core.on_move_base_available(False)
        core.on_user_goal(GOAL, runner.t)
        runner.step()
        core.on_state(State.NAVIGATING, runner.t)
        if not down_before:
            core.on_move_base_available(False)         # restarted: it holds no goal now
        core.on_user_cancel(*ALL, runner.t)
        assert core.saved_goal is None


def test_the_result_of_the_goal_an_rviz_goal_replaced_is_not_the_new_goals():
    core = make_core()
    runner = Runner(core, t=100.0)
    core.on_user_goal(FIRST, runner.t)
    runner.step()
    core.on_state(State.NAVIGATING, runner.t)
    runner.run(10.0)
    core.on_user_goal(SECOND, runner.t)                 # move_base preempts the first ...
    core.on_goal_done(PREEMPTED, False, runner.t, '/move_base-1-100.1', stamp=100.1)
    assert core.saved_goal == SECOND                    # ... whose result is not the second's
    # The second's own result (stamped when move_base accepted it, a little before this
    # node saw it) ends it; so does one with no stamp.
    core.on_goal_done(SUCCEEDED, False, runner.t, '/move_base-2-110.0', stamp=runner.t - 0.3)
    assert core.saved_goal is None
    core.on_user_goal(FIRST, runner.t)
    core.on_goal_done(SUCCEEDED, False, runner.t, '/move_base-3-0.0')
    assert core.saved_goal is None


def test_a_cancel_of_every_goal_during_the_way_to_the_viewpoint_ends_the_look_and_resumes_nothing():
    core, runner = look_at_stage('go')
    core.on_user_cancel(*ALL, runner.t)
    core.on_goal_done(PREEMPTED, True, runner.t)        # move_base preempts the look's goal
    assert core.phase == Phase.IDLE and core.saved_goal is None
    done = len(runner.log)
    runner.run(5.0)
    assert not any(c.resend_saved_goal or c.send_goal for _, c in runner.log[done:])


def test_the_adapter_passes_a_results_goal_stamp(monkeypatch):
    from move_base_msgs.msg import MoveBaseActionGoal, MoveBaseActionResult
    nodes, rospy, core, node = adapter(monkeypatch)
    simple = nodes.pose_stamped_from_goal(GOAL, rospy.Time(5))     # rviz: no goal id
    simple._connection_header = {'callerid': '/rviz'}
    node._on_simple_goal(simple)
    result = MoveBaseActionResult()
    result.status.status = PREEMPTED
    result.status.goal_id.id, result.status.goal_id.stamp = '/move_base-1-1.0', rospy.Time(1)
    node._on_result(result)                 # the goal it replaced, stamped 4 s before it came
    assert core.saved_goal is not None
    # move_base's echo on move_base/goal: no id, no goal stamp; its header stamped when
    # move_base wrapped the goal (4.8 s), on move_base's clock: from then on no slack.
    echo = MoveBaseActionGoal()
    echo.header.stamp = rospy.Time(4.8)
    echo.goal.target_pose = simple
    echo._connection_header = {'callerid': '/move_base'}
    node._on_action_goal(echo)
    result.status.goal_id.id, result.status.goal_id.stamp = '/move_base-1-4.7', rospy.Time(4.7)
    node._on_result(result)                 # preempted by the goal, 0.1 s before its echo
    assert core.saved_goal is not None
    result.status.status = SUCCEEDED
    result.status.goal_id.id, result.status.goal_id.stamp = '/move_base-2-4.8', rospy.Time(4.8)
    node._on_result(result)
    assert core.saved_goal is None


def test_an_rviz_goal_corrected_within_seconds_keeps_the_correction():
    core = make_core()
    runner = Runner(core, t=100.0)
    core.on_user_goal(FIRST, runner.t)                  # rviz ...
    core.on_user_goal(FIRST, runner.t, stamp=runner.t)  # ... and move_base's echo
    runner.step()
    core.on_state(State.NAVIGATING, runner.t)
    runner.run(1.5)                                     # the user clicks again 1.5 s later
    core.on_user_goal(SECOND, runner.t)
    core.on_user_goal(SECOND, runner.t, stamp=runner.t - 0.01)
    core.on_goal_done(PREEMPTED, False, runner.t, '/move_base-1-100.0', stamp=100.01)
    assert core.saved_goal == SECOND
    assert runner.step().request_state is None
    core.on_goal_done(SUCCEEDED, False, runner.t, '/move_base-2-101.6', stamp=runner.t)
    assert core.saved_goal is None


def test_a_move_base_that_restarts_under_the_users_goal_gets_it_again():
    core, runner = driving()
    runner.run(2.0)
    core.on_move_base_available(False)                  # respawned: it holds no goal now
    runner.run(5.0)
    assert core.saved_goal == GOAL
    core.on_move_base_available(True)
    command = runner.step()
    assert command.resend_saved_goal
    # Down only in the node's eyes: the re-send preempted the user's own copy at move_base,
    # and that PREEMPTED is not the user's.
    core.on_goal_done(PREEMPTED, False, runner.t, GOAL.goal_id)
    assert core.saved_goal == GOAL


@pytest.mark.parametrize('order', ['cancel first', 'recall first'])
def test_a_cancel_naming_our_resend_forgets_the_goal_in_either_order(order):
    """The user cancels our re-send of the saved goal by its id (read on move_base/status):
    it was pending, so move_base recalls it; the recall alone would be retried."""
    core = make_core(resume_retries=2, resume_retry_delay=5.0)
    runner = Runner(core)
    resumed(core, runner)
    ours = '/lost_and_found-3-12.000'
    if order == 'recall first':
        core.on_goal_done(RECALLED, True, runner.t, core._tag)    # noqa: SLF001
    core.on_user_cancel(ours, 0.0, runner.t, ours=True)
    if order == 'cancel first':
        core.on_goal_done(RECALLED, True, runner.t, core._tag)    # noqa: SLF001
    assert core.saved_goal is None
    assert not any(c.resend_saved_goal for c in runner.run(10.0))


def test_a_cancel_naming_our_leg_while_lost_keeps_the_goal():
    core, runner = lost_with_goal()
    core.on_user_cancel('/lost_and_found-1-3.000', 0.0, runner.t, ours=True)
    assert core.saved_goal == GOAL
