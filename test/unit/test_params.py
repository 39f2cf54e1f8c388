"""nodes/params.load_config: a bad parameter stops the node with a message naming it."""
import dataclasses

import pytest

from lost_and_found.core.config import Checker
from lost_and_found.nodes import params


@dataclasses.dataclass(frozen=True)
class Example:
    rate: float = 10.0
    frame: str = 'map'

    def validate(self):
        check = Checker(self)
        check.positive('rate')
        check.non_empty('frame')
        check.done()


@pytest.fixture
def fake_rospy(monkeypatch):
    logged = {'fatal': [], 'warn': []}
    given = {}
    monkeypatch.setattr(params.rospy, 'get_param', lambda ns, default=None: dict(given))
    monkeypatch.setattr(params.rospy, 'get_name', lambda: '/example')
    monkeypatch.setattr(params.rospy, 'logfatal',
                        lambda text, *args: logged['fatal'].append(text % args))
    monkeypatch.setattr(params.rospy, 'logwarn',
                        lambda text, *args: logged['warn'].append(text % args if args else text))
    return given, logged


def test_good_params_build_the_config(fake_rospy):
    given, logged = fake_rospy
    given.update(rate=5, typo=1)
    assert params.load_config(Example) == Example(rate=5.0)
    assert logged['fatal'] == [] and len(logged['warn']) == 1 and "'typo'" in logged['warn'][0]


def test_bad_params_exit_1_naming_every_value(fake_rospy):
    given, logged = fake_rospy
    given.update(rate=-2.0, frame='')
    with pytest.raises(SystemExit) as caught:
        params.load_config(Example)
    assert caught.value.code == 1
    text = '\n'.join(logged['fatal'])
    assert 'rate=-2.0' in text and "frame=''" in text and 'refusing to start' in text


def test_a_fallback_fills_only_a_key_the_namespace_does_not_set(fake_rospy):
    given, _logged = fake_rospy
    asked = []

    def fallback(read):
        asked.append(dict(read))
        return 4.0

    assert params.load_config(Example, fallbacks={'rate': fallback}).rate == 4.0
    assert asked == [{}]
    given.update(rate=5)
    assert params.load_config(Example, fallbacks={'rate': fallback}).rate == 5.0
    assert len(asked) == 1, 'not asked when the namespace sets the key'
    # A fallback with nothing to give leaves the field's default.
    assert params.load_config(Example, fallbacks={'frame': lambda read: None}).frame == 'map'


CONFIGS = [  # (module, config class, config/<name>.yaml)
    ('lost_and_found.core.kidnap', 'KidnapConfig', 'kidnap_monitor'),
    ('lost_and_found.core.lost_detector', 'LostDetectorConfig', 'lost_detector'),
    ('lost_and_found.core.lost_service', 'LostServiceConfig', 'lost_service'),
    ('lost_and_found.core.recovery', 'RecoveryConfig', 'lost_and_found'),
    ('lost_and_found.core.fiducial', 'FiducialLocalizerConfig', 'fiducial_localizer'),
    ('lost_and_found.sim.particle_filter', 'SimLocalizerConfig', 'sim_localizer'),
    ('lost_and_found.sim.controller', 'NavigatorConfig', 'sim_navigator'),
]
#: Paths a launch file supplies; the shipped YAMLs leave them empty.
LAUNCH_SUPPLIED = {'fiducial_map': 'config/fiducials_example.yaml', 'map_file': 'maps/lab.yaml'}


@pytest.mark.parametrize('module,cls,name', CONFIGS)
def test_every_shipped_yaml_loads_without_unknown_keys(module, cls, name):
    import importlib
    import os
    import yaml
    from lost_and_found.core.config import config_from_params
    path = os.path.join(os.path.dirname(__file__), '..', '..', 'config', name + '.yaml')
    with open(path) as f:
        data = yaml.safe_load(f) or {}
    config_cls = getattr(importlib.import_module(module), cls)
    fields = {f.name for f in dataclasses.fields(config_cls)}
    for key, value in LAUNCH_SUPPLIED.items():
        if key in fields and not data.get(key):
            data[key] = value
    warnings = []
    config_from_params(config_cls, data, warn=warnings.append)
    assert warnings == []
