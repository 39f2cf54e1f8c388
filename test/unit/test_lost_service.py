"""lost_service's decisions: merging the detector and the kidnap monitor, owning the state."""
import logging
import math

import pytest

from lost_and_found.core.config import ConfigError, config_from_params
from lost_and_found.core.lost_service import (
    CONFUSED, GLOBAL_RETRY, LOST, NEED_HELP, NORMAL, LostService, LostServiceConfig, Pose2D,
    Reseed)
from lost_and_found.state import LOCALIZED, State

HOME = Pose2D(2.0, -1.0, 0.5)
TIGHT = (0.05, 0.03)   # (major x-y, yaw) std devs of a converged amcl cloud
LOOSE = (0.8, 0.5)


def localized_service(**overrides):
    """A service that has seen a good pose at HOME."""
    service = LostService(LostServiceConfig(**overrides))
    service.on_detector_status('normal', 0.0)
    service.on_pose(HOME, TIGHT, 0.0)
    return service


def localize(service, t, count=None):
    """amcl doubts (one loose pose), then `count` (default: localized_after) tight poses with
    the detector normal."""
    service.on_detector_status('normal', t)
    service.on_pose(HOME, LOOSE, t)
    for i in range(service.config.localized_after if count is None else count):
        service.on_pose(HOME, TIGHT, t + i)


def lift_and_put_down(service, held, t0=10.0):
    """Pick up at t0, report kidnapped when held > 2 s, put down after `held` seconds."""
    service.on_picked_up(True, t0)
    if held > 2.0:
        service.on_kidnapped(True, t0 + 2.0)
    return service.on_picked_up(False, t0 + held)


def test_kidnap_reseeds_at_the_last_pose_with_inflated_covariance():
    service = localized_service()
    service.request(State.NAVIGATING, 'goal', 1.0)
    service.on_picked_up(True, 10.0)
    assert service.state == State.FLYING
    assert service.status().tier == CONFUSED
    service.on_kidnapped(True, 12.0)
    assert service.status().tier == LOST and service.status().is_lost
    actions = lift_and_put_down(service, 3.0, t0=10.0)
    assert service.state == State.LOST
    assert actions.reset_detector and not actions.global_localization
    assert actions.reseed == Reseed(HOME, 0.5, math.radians(20.0))
    cov = actions.reseed.covariance()
    assert cov[0] == pytest.approx(0.25) and cov[7] == pytest.approx(0.25)
    assert cov[35] == pytest.approx(math.radians(20.0) ** 2)
    assert sum(cov) == pytest.approx(0.5 + math.radians(20.0) ** 2)
    status = service.status()
    assert (status.tier, status.status, status.kidnapped, status.state) == (
        LOST, 'LOCALIZATION_LOST', True, 'LOST')


def test_short_lift_returns_to_the_previous_state_without_reseed():
    service = localized_service()
    service.request(State.NAVIGATING, 'goal', 1.0)
    actions = lift_and_put_down(service, 1.0)
    assert service.state == State.NAVIGATING
    assert actions.reseed is None and not actions.reset_detector


def test_short_lift_while_localizing_returns_to_lost():
    service = localized_service()
    service.on_detector_status('lost', 5.0)
    service.on_initialpose(6.0)
    assert service.state == State.LOCALIZING
    lift_and_put_down(service, 0.5)
    assert service.state == State.LOST


def test_kidnap_without_any_pose_calls_global_localization():
    service = LostService(LostServiceConfig())
    actions = lift_and_put_down(service, 3.0)
    assert service.state == State.LOST and actions.reseed is None and actions.reset_detector
    assert actions.global_localization


def test_kidnap_before_a_confident_pose_reseeds_at_the_latest_estimate():
    service = LostService(LostServiceConfig())
    service.on_pose(HOME, LOOSE, 0.0)
    assert service.last_good_pose is None
    actions = lift_and_put_down(service, 3.0)
    assert actions.reseed.pose == HOME and not actions.global_localization


def test_a_cloud_that_never_doubted_does_not_localize_a_kidnapped_robot():
    service = localized_service(localized_after=3)
    lift_and_put_down(service, 3.0)
    for i in range(10):                 # amcl stays tight where the robot was lifted
        service.on_pose(HOME, TIGHT, 20.0 + i)
    assert service.state == State.LOST
    service.on_pose(HOME, LOOSE, 31.0)  # the re-seed took: amcl doubts, then converges
    for i in range(3):
        service.on_pose(HOME, TIGHT, 32.0 + i)
    assert service.state == State.IDLE


def test_kidnap_needs_fix_ends_a_kidnap_only_through_a_pose_fix():
    service = localized_service(localized_after=3, kidnap_needs_fix=True)
    lift_and_put_down(service, 3.0)
    localize(service, 20.0, count=10)   # amcl doubts, then converges: not enough after a kidnap
    assert service.state == State.LOST
    service.on_initialpose(40.0)         # a fiducial fix
    assert service.state == State.LOCALIZING
    for i in range(3):
        service.on_pose(HOME, TIGHT, 41.0 + i)
    assert service.state == State.IDLE
    # Lost again without a kidnap (tier 2 on the ground): amcl alone may end it.
    service.on_detector_status('lost', 50.0)
    assert service.state == State.LOST
    localize(service, 51.0)
    assert service.state == State.IDLE


def test_without_kidnap_needs_fix_amcl_alone_ends_a_kidnap():
    service = localized_service(localized_after=3)
    lift_and_put_down(service, 3.0)
    localize(service, 20.0)
    assert service.state == State.IDLE


def test_tier2_on_the_ground_goes_lost_and_calls_global_localization_once():
    service = localized_service(global_localization_holdoff=20.0)
    service.on_detector_status('confused', 1.0)
    assert service.state == State.IDLE and service.status().tier == CONFUSED
    actions = service.on_detector_status('lost', 2.0)
    assert service.state == State.LOST
    assert actions.global_localization and actions.reset_detector
    # the detector comes back to lost after its reset: no second call in the same episode
    service.on_detector_status('normal', 3.0)
    assert not service.on_detector_status('lost', 40.0).global_localization
    localize(service, 41.0)
    assert service.state == State.IDLE
    # localized again, then lost again inside the hold-off of the first call: no call
    service2 = localized_service(global_localization_holdoff=20.0)
    assert service2.on_detector_status('lost', 2.0).global_localization
    localize(service2, 3.0)
    assert service2.state == State.IDLE
    assert not service2.on_detector_status('lost', 10.0).global_localization
    assert service2.state == State.LOST
    # a new episode after the hold-off calls again
    localize(service2, 11.0)
    assert service2.on_detector_status('lost', 30.0).global_localization


def test_global_localization_can_be_disabled():
    service = localized_service(use_global_localization=False)
    actions = service.on_detector_status('lost', 2.0)
    assert service.state == State.LOST and not actions.global_localization


def test_clock_jumping_back_does_not_block_global_localization_forever():
    service = localized_service(global_localization_holdoff=20.0)
    assert service.on_detector_status('lost', 1000.0).global_localization
    localize(service, 1001.0)
    assert service.on_detector_status('lost', 5.0).global_localization


def test_detector_is_ignored_while_in_the_air():
    service = localized_service()
    service.on_picked_up(True, 1.0)
    actions = service.on_detector_status('lost', 2.0)
    assert service.state == State.FLYING and not actions.global_localization


def test_fix_then_tight_poses_localize():
    service = localized_service(localized_after=3)
    service.on_detector_status('lost', 1.0)
    actions = service.on_initialpose(2.0)
    assert actions.reset_detector and service.state == State.LOCALIZING
    assert service.status().tier == CONFUSED
    service.on_detector_status('normal', 2.5)
    service.on_pose(HOME, TIGHT, 3.0)
    service.on_pose(HOME, TIGHT, 4.0)
    assert service.state == State.LOCALIZING
    service.on_pose(HOME, TIGHT, 5.0)
    assert service.state == State.IDLE and service.status().tier == NORMAL


def test_a_lost_reading_from_before_the_fix_does_not_end_localizing():
    # the detector judged amcl's pose from before the fix and published it before it got the
    # reset (two topics): lost_service keeps the fix until the detector answers 'normal'
    service = localized_service(localized_after=3)
    service.on_detector_status('lost', 1.0)       # global localization, a reset
    service.on_detector_status('confused', 1.5)   # read before that reset: ignored
    assert service.detector_status == 'lost'
    service.on_detector_status('confused', 3.5)
    service.on_detector_p_lost(0.9, 3.5)
    service.on_initialpose(4.0)
    actions = service.on_detector_status('lost', 4.1)
    service.on_detector_p_lost(0.999, 4.1)        # P(lost) of that reading: ignored too
    assert service.state == State.LOCALIZING and not actions.global_localization
    assert service.detector_status == 'confused' and service.detector_p_lost is None
    service.on_detector_status('normal', 4.2)      # the detector's answer to the reset
    service.on_detector_status('lost', 4.6)       # a reading after the reset counts
    assert service.state == State.LOST


def test_a_detector_that_never_answers_its_reset_is_heard_after_the_window():
    service = localized_service(localized_after=3)
    service.on_detector_status('lost', 1.0)
    service.on_initialpose(2.0)
    service.on_detector_status('lost', 2.9)
    assert service.state == State.LOCALIZING
    service.on_detector_status('lost', 3.0)       # RESET_ACK_WINDOW (1 s) after the reset
    assert service.state == State.LOST


def test_a_clock_jumping_back_after_a_reset_does_not_mute_the_detector():
    service = localized_service(localized_after=3)
    service.on_detector_status('lost', 100.0)
    service.on_initialpose(101.0)
    service.on_detector_status('lost', 5.0)
    assert service.state == State.LOST


def test_normal_statuses_alone_do_not_localize():
    service = localized_service(localized_after=3)
    service.on_detector_status('lost', 1.0)
    for i in range(10):
        service.on_detector_status('normal', 2.0 + i)
        service.on_pose(HOME, LOOSE, 2.0 + i)
    assert service.state == State.LOST


@pytest.mark.parametrize('breaker', ['loose pose', 'unusable covariance', 'confused',
                                     'doubtful P(lost)', 'doubtful P(lost) between poses'])
def test_the_tight_streak_must_be_unbroken(breaker):
    service = localized_service(localized_after=3, localized_max_p_lost=0.5)
    service.on_detector_status('lost', 1.0)
    service.on_detector_status('normal', 1.5)
    service.on_detector_p_lost(0.1, 1.55)
    service.on_pose(HOME, LOOSE, 1.6)
    service.on_pose(HOME, TIGHT, 2.0)
    service.on_pose(HOME, TIGHT, 3.0)
    if breaker == 'loose pose':
        service.on_pose(HOME, LOOSE, 4.0)
    elif breaker == 'unusable covariance':
        service.on_pose(HOME, None, 4.0)
    elif breaker == 'doubtful P(lost)':
        # the detector still says normal (0.95 is below its prob_thresh), but 0.95 > 0.5
        service.on_detector_p_lost(0.95, 4.0)
        service.on_pose(HOME, TIGHT, 4.2)       # the latest P(lost) is too high: not counted
        service.on_detector_p_lost(0.2, 4.5)
    elif breaker == 'doubtful P(lost) between poses':
        # a doubtful reading and a good one, with no pose in between: the count starts over
        service.on_detector_p_lost(0.95, 4.0)
        service.on_detector_p_lost(0.1, 4.5)
    else:
        service.on_detector_status('confused', 4.0)
        service.on_detector_status('normal', 4.5)
    service.on_pose(HOME, TIGHT, 5.0)
    service.on_pose(HOME, TIGHT, 6.0)
    assert service.state == State.LOST
    service.on_pose(HOME, TIGHT, 7.0)
    assert service.state == State.IDLE


def test_a_tight_pose_while_the_detector_says_lost_does_not_count():
    service = localized_service(localized_after=1)
    service.on_detector_status('lost', 1.0)
    service.on_pose(HOME, TIGHT, 2.0)
    assert service.state == State.LOST


def test_initialpose_while_localized_only_resets_the_detector():
    service = localized_service()
    actions = service.on_initialpose(1.0)
    assert actions.reset_detector and service.state == State.IDLE


def test_need_help_requested_by_recovery_and_cleared_by_a_fix():
    service = localized_service()
    assert service.request(State.NEED_HELP, 'budget', 1.0)[0] is False
    service.on_detector_status('lost', 2.0)
    assert service.request(State.NEED_HELP, 'search budget spent', 3.0)[:2] == (True, '')
    status = service.status()
    assert (status.tier, status.status, status.is_lost) == (
        NEED_HELP, 'LOCALIZATION_NEED_HELP', True)
    # the detector cannot take it out of NEED_HELP by itself
    service.on_detector_status('lost', 4.0)
    assert service.state == State.NEED_HELP
    service.on_initialpose(5.0)
    assert service.state == State.LOCALIZING


def test_flying_cannot_be_requested_and_nothing_changes_in_the_air():
    service = localized_service()
    accepted, why, _ = service.request(State.FLYING, 'test', 1.0)
    assert not accepted and 'wheel-drop' in why
    service.on_picked_up(True, 2.0)
    accepted, why, _ = service.request(State.IDLE, 'test', 3.0)
    assert not accepted and 'air' in why and service.state == State.FLYING


def test_a_request_decided_in_another_state_is_refused():
    """A stale IDLE (asked for a finished goal while NAVIGATING) after the robot went LOST
    changes nothing; the same request while the state is still the expected one is applied."""
    service = localized_service()
    service.request(State.NAVIGATING, 'goal', 1.0)
    service.request(State.LOST, 'tag check', 2.0)
    accepted, why, actions = service.request(State.IDLE, 'goal finished', 3.0,
                                             expected={State.NAVIGATING})
    assert not accepted and service.state == State.LOST
    assert 'LOST' in why and 'NAVIGATING' in why
    assert not actions.global_localization and actions.reseed is None
    accepted, why, _ = service.request(State.NEED_HELP, 'budget', 4.0,
                                       expected={State.LOST, State.LOCALIZING})
    assert accepted and why == '' and service.state == State.NEED_HELP
    # asking for the state it is in already is a no-op, accepted whatever was expected
    assert service.request(State.NEED_HELP, 'budget again', 4.5, expected={State.LOST})[:2] \
        == (True, '')
    # without expected: as before, any legal request
    assert service.request(State.IDLE, 'person', 5.0)[0] and service.state == State.IDLE


def test_illegal_request_is_refused_with_a_reason():
    service = localized_service()
    accepted, why, _ = service.request(State.LOCALIZING, 'test', 1.0)
    assert not accepted and 'IDLE -> LOCALIZING' in why and service.state == State.IDLE


def test_docking_clears_need_help_and_kidnapped():
    service = localized_service(dock_pose=(0.5, 0.0, math.pi))
    lift_and_put_down(service, 3.0)
    service.request(State.NEED_HELP, 'budget', 20.0)
    actions = service.on_dock(True, 21.0)
    assert service.state == State.IDLE and not service.kidnapped
    assert actions.reset_detector and actions.reseed.pose == Pose2D(0.5, 0.0, math.pi)
    assert service.on_dock(True, 22.0).reseed is None, 'only the rising edge acts'


def test_docking_without_dock_pose_does_not_reseed(caplog):
    service = localized_service()
    lift_and_put_down(service, 3.0)
    assert service.on_dock(True, 21.0).reseed is None and service.state == State.IDLE
    assert 'amcl is not re-seeded (no dock_pose is set)' in caplog.text


def test_docking_with_dock_pose_says_nothing_of_it(caplog):
    service = localized_service(dock_pose=(0.5, 0.0, math.pi))
    lift_and_put_down(service, 3.0)
    assert service.on_dock(True, 21.0).reseed is not None
    assert 'dock_pose' not in caplog.text


@pytest.mark.parametrize('held, before', [(3.0, State.NAVIGATING), (1.0, State.NEED_HELP)],
                         ids=['kidnap', 'short lift from NEED_HELP'])
def test_set_down_on_the_dock_with_its_signal_first_is_docked(held, before):
    """kidnap_monitor publishes the put-down and the dock's signal at once, on two topics:
    the dock's may come first, while still FLYING. Docked, as when the put-down (LOST, or
    NEED_HELP) comes first."""
    service = localized_service(dock_pose=(0.5, 0.0, math.pi))
    if before == State.NEED_HELP:
        lift_and_put_down(service, 3.0)
        service.request(State.NEED_HELP, 'budget', 20.0)
    else:
        service.request(State.NAVIGATING, 'goal', 1.0)
    service.on_picked_up(True, 30.0)
    if held > 2.0:
        service.on_kidnapped(True, 32.0)
    assert service.on_dock(True, 30.0 + held).reseed is None      # in the air: no change
    assert service.state == State.FLYING
    actions = service.on_picked_up(False, 30.0 + held)
    assert service.state == State.IDLE and not service.kidnapped
    assert actions.reset_detector and actions.reseed.pose == Pose2D(0.5, 0.0, math.pi)
    assert not actions.global_localization


def test_a_short_lift_onto_the_dock_while_localized_changes_nothing_in_either_order():
    service = localized_service(dock_pose=(0.5, 0.0, math.pi))
    service.request(State.NAVIGATING, 'goal', 1.0)
    service.on_picked_up(True, 10.0)
    service.on_dock(True, 11.0)                         # the dock's signal first
    actions = service.on_picked_up(False, 11.0)
    assert service.state == State.NAVIGATING and actions.reseed is None
    service.on_picked_up(True, 20.0)
    service.on_dock(False, 20.0)
    service.on_picked_up(False, 21.0)                   # the put-down first
    assert service.on_dock(True, 21.0).reseed is None
    assert service.state == State.NAVIGATING


def test_picked_up_from_the_dock_and_set_down_elsewhere_is_a_kidnap():
    service = localized_service(dock_pose=(0.5, 0.0, math.pi))
    service.on_dock(True, 5.0)
    service.on_picked_up(True, 10.0)
    service.on_dock(False, 10.0)
    service.on_kidnapped(True, 12.0)
    actions = service.on_picked_up(False, 13.0)
    assert service.state == State.LOST and actions.reseed.pose == HOME


def test_reset_clears_lost_but_not_flying():
    service = localized_service()
    lift_and_put_down(service, 3.0)
    actions = service.reset(20.0)
    assert actions.reset_detector and service.state == State.IDLE and not service.kidnapped
    service.on_picked_up(True, 21.0)
    service.reset(22.0)
    assert service.state == State.FLYING


def test_last_good_pose_only_while_localized_and_normal():
    service = localized_service()
    service.on_detector_status('confused', 1.0)
    service.on_pose(Pose2D(9.0, 9.0, 0.0), TIGHT, 1.0)
    assert service.last_good_pose == HOME
    service.on_detector_status('normal', 1.5)
    service.on_pose(Pose2D(7.0, 7.0, 0.0), LOOSE, 1.5)
    assert service.last_good_pose == HOME
    service.on_detector_status('lost', 2.0)
    service.on_detector_status('normal', 3.0)
    service.on_pose(Pose2D(8.0, 8.0, 0.0), TIGHT, 3.0)
    assert service.state == State.LOST and service.last_good_pose == HOME
    localize(service, 4.0)
    service.on_pose(Pose2D(6.0, 6.0, 0.0), TIGHT, 10.0)
    assert service.last_good_pose == Pose2D(6.0, 6.0, 0.0)


@pytest.mark.parametrize('p_lost', [0.98, 1.0])
def test_by_default_p_lost_does_not_matter(p_lost):
    service = localized_service(localized_after=2)
    service.on_detector_status('lost', 1.0)
    service.on_detector_status('normal', 1.5)
    service.on_pose(HOME, LOOSE, 1.6)
    service.on_detector_p_lost(p_lost, 1.7)
    service.on_pose(HOME, TIGHT, 2.0)
    service.on_pose(HOME, TIGHT, 3.0)
    assert service.state == State.IDLE


def test_with_the_check_on_a_detector_reset_forgets_its_p_lost():
    service = localized_service(localized_after=2, localized_max_p_lost=0.5)
    service.on_detector_status('lost', 1.0)
    service.on_detector_p_lost(0.1, 1.1)
    actions = service.on_initialpose(2.0)          # a fix: the detector is reset
    assert actions.reset_detector and service.detector_p_lost is None
    service.on_detector_status('normal', 2.1)
    # no reading since the reset: tight poses do not count yet
    service.on_pose(HOME, TIGHT, 3.0)
    service.on_pose(HOME, TIGHT, 4.0)
    assert service.state == State.LOCALIZING
    service.on_detector_p_lost(0.05, 4.1)
    service.on_pose(HOME, TIGHT, 5.0)
    service.on_pose(HOME, TIGHT, 6.0)
    assert service.state == State.IDLE


def test_a_pose_refused_for_its_p_lost_is_not_amcls_doubt():
    # After a kidnap a cloud that stayed tight proves nothing; a high P(lost) is not the doubt
    # that lets its tight poses count afterwards.
    service = localized_service(localized_after=2, localized_max_p_lost=0.5)
    lift_and_put_down(service, held=3.0)
    assert service.state == State.LOST
    service.on_detector_status('normal', 14.0)
    service.on_detector_p_lost(0.9, 14.1)
    service.on_pose(HOME, TIGHT, 15.0)              # refused for its P(lost) only
    service.on_detector_p_lost(0.1, 15.1)
    for i in range(4):
        service.on_pose(HOME, TIGHT, 16.0 + i)
    assert service.state == State.LOST


def test_a_pose_with_an_unusable_covariance_is_not_amcls_doubt():
    # a NaN or non-symmetric covariance (sigmas None) breaks a streak but proves no doubt
    service = localized_service(localized_after=2)
    lift_and_put_down(service, held=3.0)
    assert service.state == State.LOST
    service.on_detector_status('normal', 14.0)
    service.on_pose(HOME, None, 15.0)
    for i in range(4):
        service.on_pose(HOME, TIGHT, 16.0 + i)
    assert service.state == State.LOST
    # the detector's doubt still counts with an unreadable covariance
    service.on_detector_status('confused', 20.0)
    service.on_pose(HOME, None, 20.5)
    service.on_detector_status('normal', 21.0)
    for i in range(2):
        service.on_pose(HOME, TIGHT, 22.0 + i)
    assert service.state == State.IDLE


@pytest.mark.parametrize('value', [float('nan'), -0.1, 1.2])
def test_a_p_lost_that_is_not_a_probability_is_an_error(value):
    service = localized_service(localized_max_p_lost=0.5)
    service.on_detector_p_lost(0.2, 1.0)
    with pytest.raises(ValueError, match='not a probability'):
        service.on_detector_p_lost(value, 2.0)
    assert service.detector_p_lost == 0.2


def test_unknown_detector_status_is_an_error():
    service = localized_service()
    with pytest.raises(ValueError, match='lostt'):
        service.on_detector_status('lostt', 1.0)
    assert service.detector_status == 'normal'


@pytest.mark.parametrize('params,fragment', [
    ({'reseed_sigma_xy': 0.0}, 'reseed_sigma_xy=0.0'),
    ({'reseed_sigma_yaw': -1.0}, 'reseed_sigma_yaw=-1.0'),
    ({'reseed_sigma_xy': 1e200}, 'reseed_sigma_xy=1e+200'),   # squared: no number
    ({'reseed_sigma_yaw': 4.0}, 'reseed_sigma_yaw=4.0'),
    ({'localized_after': 0}, 'localized_after=0'),
    ({'localized_sigma_xy': 0}, 'localized_sigma_xy=0.0'),
    ({'dock_pose': [1.0, 2.0]}, 'dock_pose=(1.0, 2.0)'),
    ({'map_frame': ''}, "map_frame=''"),
    ({'map_frame': '/map'}, "map_frame='/map'"),
    ({'dock_pose': [True, 0.0, 0.0]}, 'dock_pose=(True, 0.0, 0.0)'),
    ({'dock_pose': {'x': 1.0, 'y': 2.0, 'yaw': 0.0}}, 'dock_pose: must be a list'),
    ({'global_localization_holdoff': -5}, 'global_localization_holdoff=-5.0'),
    ({'localized_max_p_lost': 1.5}, 'localized_max_p_lost=1.5'),
    ({'refute_confused_after': -1.0}, 'refute_confused_after=-1.0'),
    ({'refute_window': 0.0}, 'refute_window=0.0'),
    # Doubt as long as the probation could never refute.
    ({'refute_confused_after': 60.0, 'refute_window': 60.0}, 'refute_confused_after=60.0'),
])
def test_config_errors_name_the_value(params, fragment):
    with pytest.raises(ConfigError) as caught:
        config_from_params(LostServiceConfig, params)
    assert any(fragment in p for p in caught.value.problems), caught.value.problems


def test_nomotion_updates_only_while_localizing():
    service = localized_service(nomotion_update_period=0.5)
    assert not service.tick(1.0).nomotion_update
    service.on_detector_status('lost', 2.0)
    assert not service.tick(2.1).nomotion_update, 'LOST: the search moves the robot'
    service.on_initialpose(3.0)
    assert service.tick(3.0).nomotion_update
    assert not service.tick(3.2).nomotion_update
    assert service.tick(3.5).nomotion_update
    assert service.tick(1.0).nomotion_update, 'a clock that jumped back does not block it'
    localize(service, 4.0)
    assert service.state == State.IDLE and not service.tick(10.0).nomotion_update


def test_nomotion_updates_can_be_disabled():
    service = localized_service(nomotion_update_period=0.0)
    service.on_detector_status('lost', 2.0)
    service.on_initialpose(3.0)
    assert not service.tick(3.0).nomotion_update


def test_repeated_fixes_while_localizing_do_not_restart_the_count():
    service = localized_service(localized_after=3)
    service.on_detector_status('lost', 1.0)
    assert service.on_initialpose(2.0).reset_detector
    service.on_detector_status('normal', 2.1)
    service.on_pose(HOME, TIGHT, 2.5)
    service.on_pose(HOME, TIGHT, 3.0)
    actions = service.on_initialpose(3.2)        # the same tag, seen again
    assert not actions.reset_detector and service.state == State.LOCALIZING
    service.on_pose(HOME, TIGHT, 3.5)
    assert service.state == State.IDLE


def test_a_short_lift_after_a_kidnap_is_not_a_kidnap():
    service = localized_service()
    lift_and_put_down(service, 3.0, t0=10.0)            # kidnap: LOST, re-seeded
    service.on_initialpose(15.0)
    assert service.state == State.LOCALIZING
    # the monitor still reports kidnapped (it clears only once localized); a bump-lift now
    assert service.kidnapped
    service.on_picked_up(True, 16.0)
    assert service.status().tier == CONFUSED
    actions = service.on_picked_up(False, 16.5)
    assert actions.reseed is None and not actions.reset_detector
    assert service.state == State.LOST      # the fix went stale in the air, nothing more


def test_a_short_lift_returns_to_need_help():
    service = localized_service()
    lift_and_put_down(service, 3.0, t0=10.0)
    service.request(State.NEED_HELP, 'budget', 20.0)
    service.on_picked_up(True, 21.0)
    assert service.on_picked_up(False, 21.5).reseed is None
    assert service.state == State.NEED_HELP


def test_a_short_lift_keeps_amcls_doubt():
    service = localized_service(localized_after=3)
    service.on_detector_status('lost', 1.0)
    service.on_detector_status('normal', 1.5)
    service.on_pose(HOME, LOOSE, 2.0)                   # amcl doubted
    service.on_pose(HOME, TIGHT, 3.0)
    service.on_picked_up(True, 4.0)                     # a bump lifts both wheels
    service.on_picked_up(False, 4.5)
    assert service.state == State.LOST
    for i in range(3):
        service.on_pose(HOME, TIGHT, 5.0 + i)
    assert service.state == State.IDLE


@pytest.mark.parametrize('delay,kidnap', [(0.2, True), (2.0, False)])
def test_kidnapped_reported_just_after_the_put_down(delay, kidnap):
    # kidnap_after 0: the flag alone decides (the 2.05 s lift would be a kidnap by itself).
    service = localized_service(kidnap_grace=0.5, kidnap_after=0.0)
    service.request(State.NAVIGATING, 'goal', 1.0)
    service.on_picked_up(True, 10.0)
    service.on_picked_up(False, 12.05)                  # overtook kidnapped on its way
    assert service.state == State.NAVIGATING
    actions = service.on_kidnapped(True, 12.05 + delay)
    assert (service.state == State.LOST) is kidnap
    assert (actions.reseed is not None) is kidnap


@pytest.mark.parametrize('kidnap_after,kidnap', [(2.0, True), (3.0, False), (0.0, False)])
def test_a_long_lift_without_the_kidnapped_flag_is_a_kidnap(kidnap_after, kidnap, caplog):
    # The monitor's kidnapped never arrives (a message late or lost on a busy machine): a lift
    # as long as kidnap_after by lost_service's own clock is a kidnap all the same.
    service = localized_service(kidnap_after=kidnap_after)
    service.request(State.NAVIGATING, 'goal', 1.0)
    service.on_picked_up(True, 10.0)
    actions = service.on_picked_up(False, 12.72)
    assert (service.state == State.LOST) is kidnap
    assert (actions.reseed is not None) is kidnap and actions.reset_detector is kidnap
    assert ('without the kidnap monitor\'s kidnapped: taken as a kidnap' in caplog.text) is kidnap
    if kidnap:
        assert actions.reseed.pose == HOME
        # The flag, arriving late now, changes nothing more.
        assert service.on_kidnapped(True, 12.8).reseed is None
        assert service.state == State.LOST


def test_a_lift_that_the_flag_already_made_a_kidnap_is_not_announced_twice(caplog):
    service = localized_service()
    lift_and_put_down(service, 3.0)
    assert service.state == State.LOST
    assert 'taken as a kidnap' not in caplog.text


def test_a_long_lift_from_need_help_is_a_kidnap_as_with_the_flag():
    flagged, timed = localized_service(), localized_service()
    for service in (flagged, timed):
        lift_and_put_down(service, 3.0, t0=10.0)
        service.request(State.NEED_HELP, 'budget', 20.0)
    lift_and_put_down(flagged, 3.0, t0=30.0)
    timed.on_picked_up(True, 30.0)
    timed.on_picked_up(False, 33.0)
    assert flagged.state == timed.state == State.LOST


def test_a_kidnapped_later_than_the_grace_is_logged_and_changes_nothing(caplog):
    service = localized_service(kidnap_grace=0.5, kidnap_after=0.0)
    service.request(State.NAVIGATING, 'goal', 1.0)
    service.on_picked_up(True, 10.0)
    service.on_picked_up(False, 12.5)
    assert service.on_kidnapped(True, 13.5).reseed is None
    assert service.state == State.NAVIGATING
    assert 'came 1.00 s after the put-down, later than kidnap_grace (0.50 s)' in caplog.text


def test_a_kidnapped_long_after_a_short_lift_is_not_taken_for_that_lifts(caplog):
    # Seconds later it belongs to no lift this node saw (a pick-up lost on its way): the
    # late-kidnapped warning names only messages that could be that put-down's.
    service = localized_service(kidnap_grace=0.5, kidnap_after=0.0)
    service.request(State.NAVIGATING, 'goal', 1.0)
    service.on_picked_up(True, 10.0)
    service.on_picked_up(False, 10.5)
    caplog.set_level(logging.INFO, logger='rosout')
    assert service.on_kidnapped(True, 70.5).reseed is None
    assert service.state == State.NAVIGATING
    assert 'after the put-down' not in caplog.text
    assert 'with no lift seen here' in caplog.text


def test_a_kidnapped_within_the_grace_from_need_help_is_that_lifts(caplog):
    # From NEED_HELP the late flag changes nothing (no LOST from there), and it is no stray.
    caplog.set_level(logging.INFO, logger='rosout')
    service = localized_service(kidnap_after=0.0)
    lift_and_put_down(service, 3.0, t0=10.0)
    service.request(State.NEED_HELP, 'budget', 20.0)
    service.on_picked_up(True, 30.0)
    service.on_picked_up(False, 30.5)
    assert service.on_kidnapped(True, 30.7).reseed is None
    assert service.state == State.NEED_HELP
    assert 'with no lift seen here' not in caplog.text


def test_a_negative_kidnap_after_is_refused():
    with pytest.raises(ConfigError, match='kidnap_after'):
        LostServiceConfig(kidnap_after=-1.0).validate()


def test_the_reseed_gets_its_hold_off_before_global_localization():
    service = localized_service(reseed_holdoff=10.0)
    lift_and_put_down(service, 3.0, t0=10.0)            # put down (and re-seeded) at 13
    assert not service.on_detector_status('lost', 14.0).global_localization
    assert not service.tick(20.0).global_localization
    assert service.tick(23.0).global_localization
    assert not service.tick(24.0).global_localization, 'once'


def test_no_global_localization_when_the_reseed_worked():
    service = localized_service(reseed_holdoff=10.0)
    lift_and_put_down(service, 3.0, t0=10.0)
    service.on_detector_status('lost', 14.0)
    service.on_detector_status('normal', 15.0)          # amcl converged on the re-seed
    assert not service.tick(30.0).global_localization


def reseeded_then_fixed():
    """Put down and re-seeded at 13 (reseed_holdoff 10 s), localized by a fix at 15, ticked
    at 15.5."""
    service = localized_service(reseed_holdoff=10.0, localized_after=3)
    lift_and_put_down(service, 3.0, t0=10.0)
    service.on_initialpose(14.0)
    service.on_detector_status('normal', 14.2)
    localize(service, 15.0)
    assert service.state in LOCALIZED
    service.tick(15.5)
    return service


def test_a_clock_reset_forgets_the_reseed_of_the_old_clock():
    # the simulator is reset (the clock goes back to 0, ticks go on): a tier 2 at 18 of the
    # new clock is no re-seed's
    service = reseeded_then_fixed()
    service.tick(0.1)
    assert service.on_detector_status('lost', 18.0).global_localization


def test_without_a_clock_reset_a_tier_2_soon_after_the_reseed_still_waits():
    service = reseeded_then_fixed()
    service.tick(16.0)
    assert not service.on_detector_status('lost', 18.0).global_localization
    assert service.tick(23.0).global_localization


def test_a_clock_reset_while_lost_under_the_reseed_asks_for_global_localization():
    service = localized_service(reseed_holdoff=10.0)
    lift_and_put_down(service, 3.0, t0=10.0)            # put down (and re-seeded) at 13
    assert not service.on_detector_status('lost', 14.0).global_localization
    service.tick(14.5)
    assert service.tick(0.2).global_localization        # as before: the re-seed's time is up


def test_a_put_down_of_the_new_clock_before_the_tick_that_sees_the_reset_is_kept():
    # The clock goes back from 100 to 0; a short lift and its put-down (at 0.2) come before
    # the first tick of the new clock: the kidnap flag inside kidnap_grace still counts.
    service = localized_service(kidnap_grace=2.0)
    service.tick(100.0)
    service.on_picked_up(True, 0.01)
    service.on_picked_up(False, 0.2)
    service.tick(0.25)
    service.on_kidnapped(True, 0.4)
    assert service.state == State.LOST


def test_a_clock_reset_while_lost_and_reading_lost_under_the_reseed_asks_at_the_tick():
    service = localized_service(reseed_holdoff=10.0)
    lift_and_put_down(service, 3.0, t0=100.0)           # put down (and re-seeded) at 103
    assert not service.on_detector_status('lost', 104.0).global_localization
    service.tick(104.5)
    actions = service.tick(0.2)
    assert actions.global_localization
    assert not service.tick(0.3).global_localization, 'once'


def test_an_unconfirmed_fix_times_out_back_to_lost():
    service = localized_service(localizing_timeout=20.0)
    service.on_detector_status('lost', 1.0)
    service.on_initialpose(2.0)
    assert service.state == State.LOCALIZING
    service.tick(21.9)
    assert service.state == State.LOCALIZING
    service.tick(22.0)
    assert service.state == State.LOST


def test_a_client_refuting_the_localization_calls_global_localization():
    # The tag check asks for LOST while localized: amcl's cloud sits tight at the wrong place.
    service = localized_service(global_localization_holdoff=20.0, refuted_needs_fix=False)
    accepted, _, actions = service.request(State.LOST, 'tag 3 should be in view', 1.0)
    assert accepted and service.state == State.LOST
    assert actions.global_localization and actions.reset_detector
    # Localized again on amcl's poses, refuted again within the hold-off: not called again.
    service.on_pose(HOME, LOOSE, 2.0)
    for i in range(service.config.localized_after):
        service.on_pose(HOME, TIGHT, 3.0 + i)
    assert service.state == State.IDLE
    assert not service.request(State.LOST, 'refuted again', 15.0)[2].global_localization
    # After the hold-off it is.
    service.on_pose(HOME, LOOSE, 16.0)
    for i in range(service.config.localized_after):
        service.on_pose(HOME, TIGHT, 17.0 + i)
    assert service.request(State.LOST, 'refuted again', 30.0)[2].global_localization


def test_a_refuted_estimate_ends_lost_only_through_a_pose_fix():
    # The recovery node doubts a localization on amcl's word (move_base aborted the goal it
    # resumed): amcl converging tight again does not end that LOST, a tag's fix does.
    service = localized_service(localized_after=3)
    assert service.config.refuted_needs_fix        # the default
    accepted, _, actions = service.request(State.LOST, 'the resumed goal was aborted', 1.0,
                                           expected={State.NAVIGATING, State.IDLE})
    assert accepted and actions.global_localization
    localize(service, 2.0, count=10)
    assert service.state == State.LOST
    service.on_initialpose(20.0)
    assert service.state == State.LOCALIZING
    for i in range(3):
        service.on_pose(HOME, TIGHT, 21.0 + i)
    assert service.state == State.IDLE
    # Localized again: a later tier 2 on the ground may end on amcl's poses alone.
    service.on_detector_status('lost', 50.0)
    assert service.state == State.LOST
    localize(service, 51.0)
    assert service.state == State.IDLE


def refuted_service():
    """Localized at HOME, then refuted by the tag check (LOST requested while IDLE)."""
    service = localized_service(localized_after=3, localizing_timeout=5.0)
    assert service.request(State.LOST, 'tag 3 should be in view', 1.0,
                           expected={State.IDLE, State.NAVIGATING})[0]
    return service


def test_a_refuted_episode_needs_its_fix_after_an_unconfirmed_one():
    service = refuted_service()
    service.on_initialpose(2.0)                     # a fix that is not confirmed ...
    service.tick(3.0)
    service.tick(8.0)
    assert service.state == State.LOST              # ... times out back to LOST
    localize(service, 10.0, count=10)
    assert service.state == State.LOST


@pytest.mark.parametrize('held', [1.0, 3.0])        # a short lift, a kidnap
def test_a_refuted_episode_needs_its_fix_after_a_lift(held):
    service = refuted_service()
    lift_and_put_down(service, held, t0=5.0)
    assert service.state == State.LOST
    localize(service, 30.0, count=10)
    assert service.state == State.LOST
    service.on_initialpose(45.0)
    localize(service, 46.0)
    assert service.state == State.IDLE


def test_a_refuted_episode_needs_its_fix_through_need_help():
    service = refuted_service()
    assert service.request(State.NEED_HELP, 'search budget spent', 5.0)[0]
    lift_and_put_down(service, 3.0, t0=10.0)        # someone carries it off: LOST again
    assert service.state == State.LOST
    localize(service, 30.0, count=10)
    assert service.state == State.LOST


def test_a_refutation_that_arrives_after_tier_2_still_needs_a_fix():
    # The wrong estimate tripped the detector and made move_base abort: the doubt, decided
    # while NAVIGATING, reaches lost_service after tier 2 made the state LOST.
    service = localized_service(localized_after=3)
    service.request(State.NAVIGATING, 'goal', 0.5)
    service.on_detector_status('lost', 1.0)
    assert service.state == State.LOST
    accepted, _, actions = service.request(State.LOST, 'the resumed goal was aborted', 1.2,
                                           expected={State.NAVIGATING, State.IDLE})
    assert accepted and not actions.global_localization     # called at tier 2 already
    localize(service, 2.0, count=10)
    assert service.state == State.LOST


@pytest.mark.parametrize('expected', [None, {State.LOST}])
def test_a_request_for_lost_while_lost_is_no_refutation(expected):
    service = localized_service(localized_after=3)
    service.on_detector_status('lost', 1.0)
    assert service.request(State.LOST, 'lost again', 1.2, expected=expected)[0]
    localize(service, 2.0)
    assert service.state == State.IDLE


def test_a_refused_request_for_lost_is_no_refutation():
    service = localized_service(localized_after=3)
    service.on_detector_status('lost', 1.0)
    service.on_initialpose(2.0)                     # LOCALIZING: the tag check's LOST is stale
    assert not service.request(State.LOST, 'tag 3 should be in view', 2.5,
                               expected={State.IDLE, State.NAVIGATING})[0]
    service.tick(30.0)                              # the fix times out: LOST by tier 2's rules
    assert service.state == State.LOST
    localize(service, 31.0)
    assert service.state == State.IDLE


@pytest.mark.parametrize('end', ['dock', 'reset', 'reset in the air'])
def test_docking_or_a_reset_ends_a_refuted_episode(end):
    service = refuted_service()
    if end == 'dock':
        service.on_dock(True, 2.0)
    elif end == 'reset':
        service.reset(2.0)
    else:
        service.on_picked_up(True, 2.0)
        service.reset(2.5)
        service.on_picked_up(False, 3.0)            # short lift: back to LOST
        assert service.state == State.LOST
        localize(service, 4.0)
        assert service.state == State.IDLE
    assert service.state == State.IDLE
    service.on_detector_status('lost', 10.0)
    localize(service, 11.0)
    assert service.state == State.IDLE


def test_without_refuted_needs_fix_amcl_alone_ends_a_refuted_lost():
    service = localized_service(localized_after=3, refuted_needs_fix=False)
    service.request(State.LOST, 'tag 3 should be in view', 1.0)
    localize(service, 2.0)
    assert service.state == State.IDLE


def test_other_requests_call_no_global_localization():
    service = localized_service()
    assert not service.request(State.NAVIGATING, 'goal', 1.0)[2].global_localization
    assert not localized_service(use_global_localization=False).request(
        State.LOST, 'tag 3 should be in view', 1.0)[2].global_localization
    service.on_detector_status('lost', 2.0)             # tier 2: called here ...
    assert service.state == State.LOST
    accepted, _, actions = service.request(State.NEED_HELP, 'budget', 3.0)
    assert accepted and not actions.global_localization     # ... not on a request from LOST


@pytest.mark.parametrize('delay, resent', [(0.0, True), (0.05, True), (1.0, True),
                                           (1.01, False), (-0.5, False)])
def test_a_fix_just_after_the_put_down_reseed_is_sent_again(delay, resent):
    # the re-seed (t = 13) and a tag's fix reach amcl on two connections: a fix that may
    # have overtaken the re-seed is sent again, after it; a clock that jumped back is not "just
    # after"
    service = localized_service()
    assert lift_and_put_down(service, 3.0).reseed is not None
    actions = service.on_initialpose(13.0 + delay)
    assert actions.resend_fix == resent
    assert service.state == State.LOCALIZING        # the fix counts either way


def test_a_second_fix_within_the_window_is_sent_again_too():
    service = localized_service()
    lift_and_put_down(service, 3.0)
    assert service.on_initialpose(13.1).resend_fix
    assert service.state == State.LOCALIZING
    assert service.on_initialpose(13.9).resend_fix  # LOCALIZING already: still after the re-seed
    assert not service.on_initialpose(14.2).resend_fix


def test_fixes_without_a_reseed_before_them_are_not_sent_again():
    service = localized_service()
    service.on_detector_status('lost', 5.0)         # LOST without a re-seed
    assert not service.on_initialpose(5.2).resend_fix
    lift_and_put_down(service, 1.0, t0=20.0)        # a short lift: no re-seed either
    assert not service.on_initialpose(21.2).resend_fix


def test_a_fix_just_after_the_dock_reseed_is_sent_again():
    service = localized_service(dock_pose=(0.0, 0.0, 0.0))
    service.on_detector_status('lost', 5.0)
    assert service.on_dock(True, 6.0).reseed is not None
    assert service.on_initialpose(6.3).resend_fix


def test_a_lost_reading_kept_through_a_short_lift_makes_the_robot_lost():
    # The detector reads lost while the robot is held (not acted on in the air); back on the
    # ground after a short lift, its next 'lost' is news, though it reads as before.
    service = localized_service()
    service.request(State.NAVIGATING, 'goal', 1.0)
    service.on_picked_up(True, 10.0)
    service.on_detector_status('lost', 10.5)
    service.on_picked_up(False, 11.0)
    assert service.state == State.NAVIGATING
    assert service.on_detector_status('lost', 12.0).global_localization
    assert service.state == State.LOST


def test_a_lost_reading_held_after_a_person_asks_for_idle_makes_the_robot_lost_again():
    service = localized_service()
    service.on_detector_status('lost', 5.0)
    service.on_detector_status('normal', 5.1)       # the detector's answer to its reset
    service.on_detector_status('lost', 8.0)
    service.request(State.NEED_HELP, 'budget spent', 9.0)
    accepted, _, _ = service.request(State.IDLE, 'a person: it is fine', 10.0)
    assert accepted and service.state == State.IDLE
    service.on_detector_status('lost', 11.0)         # the detector still holds tier 2
    assert service.state == State.LOST
    # A robot localized by its own tight poses reads normal first: nothing changes there.
    localize(service, 20.0)
    assert service.state == State.IDLE
    service.on_detector_status('normal', 40.0)
    assert service.state == State.IDLE


def test_a_kidnap_reported_just_after_a_short_lift_from_lost_re_seeds():
    service = localized_service(kidnap_after=0.0)   # the flag alone decides
    service.on_detector_status('lost', 5.0)
    assert service.state == State.LOST
    service.on_picked_up(True, 10.0)
    assert not service.on_picked_up(False, 12.5).reseed         # back to LOST, short lift
    actions = service.on_kidnapped(True, 12.6)                  # within kidnap_grace
    assert service.state == State.LOST
    assert actions.reseed is not None and actions.reseed.pose == HOME
    assert actions.reset_detector


def test_a_failed_global_localization_is_tried_again_while_still_lost():
    service = localized_service()
    assert service.on_detector_status('lost', 10.0).global_localization
    service.on_global_localization_failed(12.0)                 # amcl not up yet
    assert not service.tick(12.0 + GLOBAL_RETRY - 0.1).global_localization
    assert service.tick(12.0 + GLOBAL_RETRY).global_localization
    assert not service.tick(30.0).global_localization           # once per failure
    # Not when the detector no longer reads lost, or the robot is no longer LOST.
    service.on_global_localization_failed(31.0)
    service.on_detector_status('normal', 32.0)
    assert not service.tick(31.0 + GLOBAL_RETRY).global_localization


# -- probation of a localization on amcl's poses alone (refute_confused_after) ----------------

def alone_localized_service(**overrides):
    """Kidnapped at t=10 (put down at 13), then localized at t=22 on tight amcl poses alone
    (LOST -> IDLE, no pose fix), driving its goal."""
    settings = dict(localized_after=3, refute_confused_after=4.0, refute_window=60.0)
    settings.update(overrides)
    service = localized_service(**settings)
    service.request(State.NAVIGATING, 'goal', 1.0)
    lift_and_put_down(service, 3.0, t0=10.0)
    assert service.state == State.LOST
    localize(service, 20.0)
    assert service.state == State.IDLE
    assert service.request(State.NAVIGATING, 'resuming the saved goal', 22.5)[0]
    return service


def confused_for(service, start, seconds, status='confused'):
    """Detector readings of ``status`` every 0.5 s from ``start`` for ``seconds``, with ticks;
    returns the actions of every step."""
    actions = []
    t = start
    while t <= start + seconds + 1e-9:
        actions.append(service.on_detector_status(status, t))
        actions.append(service.tick(t + 0.25))
        t += 0.5
    return actions


def test_a_localization_on_amcl_alone_that_the_detector_doubts_is_refuted():
    service = alone_localized_service()
    confused_for(service, 30.0, 3.5)                # 3.75 s of doubt: not yet
    assert service.state == State.NAVIGATING
    assert service.status().status == 'LOCALIZATION_CONFUSED'
    actions = service.tick(34.0)                    # 4 s since the first confused reading
    assert service.state == State.LOST
    assert actions.global_localization and actions.reset_detector
    # amcl converging tight again does not end this LOST (refuted_needs_fix); a tag's fix does
    localize(service, 40.0, count=10)
    assert service.state == State.LOST
    service.on_initialpose(60.0)
    assert service.state == State.LOCALIZING
    localize(service, 61.0)
    assert service.state == State.IDLE


def test_a_normal_reading_restarts_the_count_of_doubt():
    service = alone_localized_service()
    confused_for(service, 30.0, 3.0)
    service.on_detector_status('normal', 33.5)
    confused_for(service, 34.0, 3.5)
    service.tick(37.9)
    assert service.state == State.NAVIGATING
    service.tick(38.0)
    assert service.state == State.LOST


@pytest.mark.parametrize('how', ['a tag fix', 'a fix before the localization', 'docked',
                                 'reset', 'off', 'after the window'])
def test_no_refutation_of_a_confirmed_localization_or_outside_the_probation(how):
    if how == 'off':
        service = alone_localized_service(refute_confused_after=0.0)
    elif how == 'a fix before the localization':
        service = localized_service(localized_after=3, refute_confused_after=4.0)
        lift_and_put_down(service, 3.0, t0=10.0)
        service.on_initialpose(15.0)
        localize(service, 20.0)
        assert service.state == State.IDLE
    else:
        service = alone_localized_service()
    start = 30.0
    if how == 'a tag fix':
        service.on_initialpose(25.0)                # a tag's correction while localized
        assert service.state == State.NAVIGATING
    elif how == 'docked':
        service.on_dock(True, 25.0)
    elif how == 'reset':
        service.reset(25.0)
    elif how == 'after the window':
        service.tick(50.0)
        service.tick(82.1)                          # 60 s after the localization (t=22)
        start = 83.0
    before = service.state
    confused_for(service, start, 20.0)
    assert service.state == before


def test_tier_2_on_probation_is_the_detector_rule_not_a_refutation():
    # LOST by tier 2, as without the probation: amcl's poses alone may end it.
    service = alone_localized_service()
    confused_for(service, 30.0, 1.0)
    actions = service.on_detector_status('lost', 31.5)
    assert service.state == State.LOST and actions.global_localization
    localize(service, 40.0)
    assert service.state == State.IDLE


def test_a_clock_that_jumps_back_restarts_the_probation():
    service = alone_localized_service()
    confused_for(service, 30.0, 2.0)
    service.tick(5.0)                               # the clock jumped back 27 s
    assert service.state == State.NAVIGATING
    confused_for(service, 5.5, 3.0)                 # 3.25 s on the new clock: not yet
    assert service.state == State.NAVIGATING
    confused_for(service, 9.0, 1.0)
    assert service.state == State.LOST


def test_the_probation_outlasts_the_goal_ending_and_a_short_lift():
    service = alone_localized_service()
    assert service.request(State.IDLE, 'goal reached', 25.0)[0]
    confused_for(service, 26.0, 2.0)
    lift_and_put_down(service, 1.0, t0=29.0)        # a bump: both wheels dropped for 1 s
    assert service.state == State.IDLE
    confused_for(service, 30.5, 3.0)                # the count of doubt started again
    assert service.state == State.IDLE
    confused_for(service, 34.0, 1.0)
    assert service.state == State.LOST


def test_a_silence_of_the_detector_is_no_doubt():
    # amcl publishes only after motion: a robot standing still keeps its last reading.
    service = alone_localized_service()
    service.on_detector_status('confused', 30.0)
    for t in (31.0, 33.0, 40.0):
        service.tick(t)
    assert service.state == State.NAVIGATING
    service.on_detector_status('confused', 40.5)    # moving again: a new run of doubt
    service.tick(44.0)
    assert service.state == State.NAVIGATING
    confused_for(service, 41.0, 3.5)
    assert service.state == State.LOST


def test_a_refutation_within_the_hold_off_calls_no_global_localization():
    # Tier 2 at 24 s called global localization; the refutation at 38 s is within its hold-off.
    service = alone_localized_service(global_localization_holdoff=20.0)
    service.on_detector_status('lost', 24.0)        # tier 2: LOST, global localization
    localize(service, 30.0)
    assert service.state == State.IDLE
    actions = confused_for(service, 34.0, 4.5)
    assert service.state == State.LOST
    assert not any(a.global_localization for a in actions)
