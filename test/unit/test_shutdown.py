"""quiet_at_shutdown: a publish to a closed topic during shutdown ends a callback quietly."""
import pytest
import rospy

from lost_and_found.nodes.shutdown import quiet_at_shutdown


def closed_topic(_msg, extra=None):
    """A callback whose publish finds its topic closed."""
    raise rospy.ROSException('publish() to a closed topic')


def test_a_closed_topic_during_shutdown_is_quiet(monkeypatch):
    monkeypatch.setattr(rospy, 'is_shutdown', lambda: True)
    assert quiet_at_shutdown(closed_topic)('msg', 'callback args') is None


def test_the_same_error_while_running_still_raises(monkeypatch):
    monkeypatch.setattr(rospy, 'is_shutdown', lambda: False)
    with pytest.raises(rospy.ROSException):
        quiet_at_shutdown(closed_topic)('msg')


def test_other_errors_and_results_pass_through(monkeypatch):
    monkeypatch.setattr(rospy, 'is_shutdown', lambda: True)

    def bad(_msg):
        raise ValueError('bad message')
    with pytest.raises(ValueError):
        quiet_at_shutdown(bad)('msg')
    assert quiet_at_shutdown(lambda msg: msg * 2)(21) == 42
