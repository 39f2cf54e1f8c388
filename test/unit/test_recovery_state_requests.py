"""RecoveryCore's state requests: each names the state it was decided in, and the state follows
the saved goal (NAVIGATING while it is driven, IDLE once nothing drives it), also when a
goal's end and its NAVIGATING cross."""
import dataclasses

from lost_and_found.core.recovery import ABORTED, SUCCEEDED
from lost_and_found.state import LOCALIZED, State
from test_recovery import GOAL, Runner, make_core, resumed, user_goal_then_lost

OTHER = dataclasses.replace(GOAL, x=1.0, goal_id='/rviz-2-20.0')


def requests(commands):
    """(state, expected states) of every state request among ``commands``."""
    return [(c.request_state, c.expected_states) for c in commands if c.request_state]


def navigating(core, runner, goal=GOAL):
    """The user sends ``goal`` while IDLE; NAVIGATING is asked for (only while still IDLE)
    and granted."""
    core.on_user_goal(goal, runner.t)
    assert requests([runner.step()]) == [(State.NAVIGATING, {State.IDLE})]
    core.on_state(State.NAVIGATING, runner.t)


def test_an_aborted_user_goal_is_kept_and_idle_asked_for_while_navigating():
    core = make_core()
    runner = Runner(core)
    navigating(core, runner)
    core.on_goal_done(ABORTED, False, runner.t, GOAL.goal_id)
    assert core.saved_goal == GOAL
    assert requests(runner.run(5.0)) == [(State.IDLE, {State.NAVIGATING})]
    core.on_state(State.IDLE, runner.t)
    # lost later: the episode still resumes the goal it kept
    core.on_state(State.LOST, runner.t)
    runner.run(2.0)
    core.on_state(State.IDLE, runner.t)
    command = runner.step()
    assert command.resend_saved_goal
    assert requests([command]) == [(State.NAVIGATING, {State.IDLE})]


def test_a_resumed_goal_aborted_every_time_asks_for_idle_once():
    core = make_core(resume_retries=1, resume_retry_delay=5.0, max_doubts=0)
    runner = Runner(core)
    resumed(core, runner)
    core.on_goal_done(ABORTED, True, runner.t)
    assert runner.until(lambda c: c.resend_saved_goal, limit=10.0)
    core.on_goal_done(ABORTED, True, runner.t)
    given_up = runner.run(20.0)
    assert not any(c.resend_saved_goal for c in given_up)
    assert requests(given_up) == [(State.IDLE, {State.NAVIGATING})]
    assert core.saved_goal == GOAL


def test_a_goal_that_ends_before_navigating_is_granted_asks_for_idle_then():
    """The goal is reached (or aborted for good) while NAVIGATING is still being asked for:
    once it is granted, IDLE is asked for, since nothing drives the robot."""
    for status in (SUCCEEDED, ABORTED):
        core = make_core()
        runner = Runner(core)
        core.on_user_goal(GOAL, runner.t)
        assert runner.step().request_state == State.NAVIGATING
        core.on_goal_done(status, False, runner.t, GOAL.goal_id)
        assert not requests(runner.run(1.0))        # IDLE: nothing to ask yet
        assert (core.saved_goal is None) == (status == SUCCEEDED)
        core.on_state(State.NAVIGATING, runner.t)
        assert requests(runner.run(1.0)) == [(State.IDLE, {State.NAVIGATING})]


def test_navigating_asked_for_by_someone_else_is_left_alone():
    core = make_core()
    runner = Runner(core)
    core.on_state(State.NAVIGATING, runner.t)       # not asked by us, no goal saved
    assert not requests(runner.run(1.0))
    core.on_state(State.IDLE, runner.t)
    navigating(core, runner)                         # asked and granted, the goal driven
    core.on_state(State.IDLE, runner.t)
    core.on_state(State.NAVIGATING, runner.t)
    assert not requests(runner.run(1.0))


def test_a_user_goal_right_after_idle_was_asked_for_keeps_navigating():
    """The goal succeeds, IDLE is asked for; a new goal comes before the state changed."""
    core = make_core()
    runner = Runner(core)
    navigating(core, runner)
    # in the same control period: the IDLE request is withdrawn, nothing is asked
    core.on_goal_done(SUCCEEDED, False, runner.t, GOAL.goal_id)
    core.on_user_goal(OTHER, runner.t)
    assert not requests(runner.run(1.0)) and core.saved_goal == OTHER
    # after it went out: NAVIGATING is asked for again, for once IDLE is granted
    core.on_goal_done(SUCCEEDED, False, runner.t, OTHER.goal_id)
    assert requests([runner.step()]) == [(State.IDLE, {State.NAVIGATING})]
    core.on_user_goal(GOAL, runner.t)
    assert requests([runner.step()]) == [(State.NAVIGATING, {State.IDLE})]
    core.on_state(State.IDLE, runner.t)
    core.on_state(State.NAVIGATING, runner.t)
    assert not requests(runner.run(1.0)) and core.saved_goal == GOAL


def test_a_doubt_asks_for_lost_only_while_localized_and_help_only_while_lost():
    core = make_core(resume_retries=2, max_doubts=1)
    runner = Runner(core)
    resumed(core, runner)
    core.on_goal_done(ABORTED, True, runner.t)
    assert requests([runner.step()]) == [(State.LOST, LOCALIZED)]
    core = make_core(max_search_time=10.0)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    asked = requests(runner.run(12.0))
    assert asked == [(State.NEED_HELP, {State.LOST})]


def test_a_goal_that_ends_in_the_air_asks_for_idle_after_a_short_lift():
    """lost_service refuses every request in the air; a short lift then restores NAVIGATING,
    with nothing driving it."""
    for status in (SUCCEEDED, ABORTED):
        core = make_core()
        runner = Runner(core)
        navigating(core, runner)
        core.on_state(State.FLYING, runner.t)
        core.on_goal_done(status, False, runner.t, GOAL.goal_id)
        runner.run(1.0)
        core.on_state(State.NAVIGATING, runner.t)       # put down after a short lift
        assert requests(runner.run(1.0)) == [(State.IDLE, {State.NAVIGATING})]
    # a goal still driven after a short lift: nothing to ask
    core = make_core()
    runner = Runner(core)
    navigating(core, runner)
    core.on_state(State.FLYING, runner.t)
    core.on_state(State.NAVIGATING, runner.t)
    assert not requests(runner.run(1.0))


def test_a_retry_due_in_the_air_waits_for_the_put_down_without_spending_an_attempt():
    core = make_core(resume_retries=1, resume_retry_delay=5.0, max_doubts=0)
    runner = Runner(core)
    resumed(core, runner)
    core.on_goal_done(ABORTED, True, runner.t)
    runner.run(4.5)
    core.on_state(State.FLYING, runner.t)               # lifted just before the retry
    commands = runner.run(6.0)
    assert not any(c.resend_saved_goal for c in commands) and not requests(commands)
    core.on_state(State.NAVIGATING, runner.t)           # a short lift: NAVIGATING again
    again = runner.until(lambda c: c.resend_saved_goal, limit=6.0)
    assert again is not None and again.request_state is None
    assert core.saved_goal == GOAL
    # That was the one attempt left: the next abort keeps the goal saved, IDLE asked for.
    core.on_goal_done(ABORTED, True, runner.t)
    commands = runner.run(20.0)
    assert not any(c.resend_saved_goal for c in commands)
    assert requests(commands) == [(State.IDLE, {State.NAVIGATING})]
    assert core.saved_goal == GOAL


def test_goals_that_come_and_go_within_one_period_after_idle_left_keep_navigating():
    """IDLE has left; within one control period goal B comes (NAVIGATING asked back), ends
    (IDLE asked), and goal C comes: NAVIGATING is asked back again, not just the IDLE
    withdrawn, since the IDLE that left will still be granted."""
    core = make_core()
    runner = Runner(core)
    navigating(core, runner)
    core.on_goal_done(SUCCEEDED, False, runner.t, GOAL.goal_id)
    assert requests([runner.step()]) == [(State.IDLE, {State.NAVIGATING})]
    third = dataclasses.replace(GOAL, x=2.0, goal_id='/rviz-3-30.0')
    core.on_user_goal(OTHER, runner.t)
    core.on_goal_done(SUCCEEDED, False, runner.t, OTHER.goal_id)
    core.on_user_goal(third, runner.t)
    assert requests([runner.step()]) == [(State.NAVIGATING, {State.IDLE})]
    assert core.saved_goal == third
