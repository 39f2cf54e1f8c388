"""The wire-identical kobuki_msgs / fiducial_msgs definitions have the real md5sums."""
import os

import pytest

# md5sums of the real TurtleBot2 messages (kobuki_msgs @ ec50979, fiducial_msgs @ 6c09104),
# as genmsg computes them; ../shared/data/msgs/MD5SUMS.txt lists the same values.
REAL_MD5 = {
    'kobuki_msgs/WheelDropEvent': 'e102837d89384d67669a0df86b63f33b',
    'kobuki_msgs/SensorState': '430a4bfd78449c8740bfef32b26613a6',
    'fiducial_msgs/FiducialTransform': '9f77f4c92fda876d2249ffbc19859044',
    'fiducial_msgs/FiducialTransformArray': 'a9391b25df2859cb1ae6fa6ee45ef075',
}
SHARED_MD5SUMS = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'data',
                              'msgs', 'MD5SUMS.txt')


def message_class(name):
    package, message = name.split('/')
    module = __import__(package + '.msg', fromlist=[message])
    return getattr(module, message)


@pytest.mark.parametrize('name', sorted(REAL_MD5))
def test_md5_matches_the_real_message(name):
    cls = message_class(name)
    assert cls._type == name
    assert cls._md5sum == REAL_MD5[name]


def test_md5_matches_the_shared_reference_file():
    if not os.path.exists(SHARED_MD5SUMS):
        pytest.skip('../shared/data/msgs/MD5SUMS.txt is absent: only the embedded md5s checked')
    listed = {}
    with open(SHARED_MD5SUMS) as f:
        for line in f:
            if line.strip() and not line.startswith('#'):
                name, md5 = line.split()
                listed[name] = md5
    for name in REAL_MD5:
        assert message_class(name)._md5sum == listed[name], name


def test_constants_the_nodes_rely_on():
    from kobuki_msgs.msg import SensorState, WheelDropEvent
    assert (WheelDropEvent.LEFT, WheelDropEvent.RIGHT) == (0, 1)
    assert (WheelDropEvent.RAISED, WheelDropEvent.DROPPED) == (0, 1)
    assert (SensorState.WHEEL_DROP_RIGHT, SensorState.WHEEL_DROP_LEFT) == (1, 2)
    assert (SensorState.DOCKING_CHARGED, SensorState.DOCKING_CHARGING) == (2, 6)
    assert (SensorState.ADAPTER_CHARGED, SensorState.ADAPTER_CHARGING) == (18, 22)


def test_localization_status_constants():
    from lost_and_found.msg import LocalizationStatus
    assert (LocalizationStatus.NORMAL, LocalizationStatus.CONFUSED, LocalizationStatus.LOST,
            LocalizationStatus.NEED_HELP) == (0, 1, 2, 3)
