"""The shared config machinery: coercion, unknown keys, one error naming every bad value."""
import dataclasses

import pytest

from lost_and_found.core.config import (
    Checker, ConfigError, config_from_params, flatten, param_field)


@dataclasses.dataclass(frozen=True)
class Example:
    rate: float = 10.0
    count: int = 3
    enabled: bool = True
    frame: str = 'map'
    mu: tuple = (0.1, 0.2)
    threshold: float = param_field('group/threshold', 0.5)

    def validate(self):
        check = Checker(self)
        check.positive('rate')
        check.positive_int('count')
        check.non_empty('frame')
        check.in_range('threshold', 0.0, 1.0, low_open=True, high_open=True)
        check.require(len(self.mu) == 2, 'mu', 'have 2 values')
        check.done()


def test_defaults_and_coercion():
    config = config_from_params(Example, {'rate': 5, 'count': 4.0, 'mu': [1, 2],
                                          'group': {'threshold': 0.25}})
    assert config.rate == 5.0 and isinstance(config.rate, float)
    assert config.count == 4 and isinstance(config.count, int)
    assert config.mu == (1.0, 2.0)
    assert config.threshold == 0.25
    assert config_from_params(Example, {}) == Example()


def test_unknown_keys_are_warned_not_fatal():
    warnings = []
    config_from_params(Example, {'rat': 3.0, 'group': {'treshold': 1}}, warn=warnings.append)
    assert len(warnings) == 2
    assert "'group/treshold'" in warnings[0] and "'rat'" in warnings[1]


def test_every_bad_value_is_named_in_one_error():
    with pytest.raises(ConfigError) as caught:
        config_from_params(Example, {'rate': -1.0, 'count': 0, 'frame': ' ',
                                     'group': {'threshold': 1.0}})
    problems = caught.value.problems
    assert len(problems) == 4
    for fragment in ("rate=-1.0", "count=0", "frame=' '", "group/threshold=1.0"):
        assert any(fragment in p for p in problems), (fragment, problems)


@pytest.mark.parametrize('params,fragment', [
    ({'rate': 'fast'}, "rate='fast': must be a number"),
    ({'rate': True}, 'rate=True: must be a number'),
    ({'count': 2.5}, 'count=2.5: must be an integer'),
    ({'enabled': 'yes'}, "enabled='yes': must be true or false"),
    ({'frame': 3}, 'frame=3: must be a string'),
    ({'mu': 0.3}, 'mu=0.3: must be a list'),
    ({'mu': ['a', 1]}, "must be a list of numbers"),
    ({'rate': float('nan')}, 'rate=nan: must be a finite number'),
    # Beyond the parameter server's 32-bit integers (a window of 1e300 readings would
    # overflow the detector's queues at start-up).
    ({'count': 1.0e300}, 'must be an integer within'),
    ({'count': 2 ** 40}, 'must be an integer within'),
    # A mapping under a parameter's name, or a value where a group belongs: refused, not
    # warned about and left at the default.
    ({'mu': {'x': 1.0, 'y': 2.0}}, "mu: must be a list, not a mapping (found mu/x=1.0)"),
    ({'group': False}, "group=False: is a group of parameters (group/threshold), not a value"),
])
def test_type_errors_name_key_and_value(params, fragment):
    with pytest.raises(ConfigError) as caught:
        config_from_params(Example, params)
    assert any(fragment in p for p in caught.value.problems), caught.value.problems


def test_flatten_nested():
    assert flatten({'a': {'b': 1, 'c': {'d': 2}}, 'e': 3}) == {'a/b': 1, 'a/c/d': 2, 'e': 3}


@pytest.mark.parametrize('value, ok', [
    ('map', True), ('base_footprint', True), ('robot1/base_link', True),
    ('/map', False), ('base_footprint ', False), ('', False), (' ', False), (3, False),
])
def test_a_frame_name_tf2_would_refuse_is_named(value, ok):
    @dataclasses.dataclass(frozen=True)
    class Frames:
        frame: str = 'map'
        optional: str = ''

        def validate(self):
            check = Checker(self)
            check.frame('frame')
            check.frame('optional', optional=True)
            check.done()
    if ok:
        assert config_from_params(Frames, {'frame': value}).frame == value
        return
    with pytest.raises(ConfigError) as caught:
        Frames(frame=value).validate()
    assert len(caught.value.problems) == 1 and caught.value.problems[0].startswith('frame=')
    if value == '/map':
        assert 'leading "/"' in caught.value.problems[0] and "'map'" in caught.value.problems[0]
    with pytest.raises(ConfigError):
        Frames(optional='/map').validate()
