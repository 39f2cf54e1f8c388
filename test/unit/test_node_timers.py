"""Every node's rospy.Timer survives a clock that jumps back.

Without ``reset=True`` a rospy.Timer's thread ends with ROSTimeMovedBackwardsException when
the ROS clock goes back (a simulation restarted, a bag looped with --clock), and with it
whatever the node does periodically: the recovery node's control loop, lost_service's
time-outs, the kidnap monitor's pick-up timer, sim_localizer's map -> odom.
"""
import ast
import glob
import os

NODES = os.path.join(os.path.dirname(__file__), '..', '..', 'src', 'lost_and_found', 'nodes')


def timer_calls():
    """(file, line, has reset=True) of every rospy.Timer(...) call in the node adapters."""
    calls = []
    for path in sorted(glob.glob(os.path.join(NODES, '*.py'))):
        with open(path) as stream:
            tree = ast.parse(stream.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == 'Timer' and isinstance(node.func.value, ast.Name) and \
                    node.func.value.id == 'rospy':
                reset = any(k.arg == 'reset' and isinstance(k.value, ast.Constant) and
                            k.value.value is True for k in node.keywords)
                calls.append((os.path.basename(path), node.lineno, reset))
    return calls


def test_every_node_timer_is_created_with_reset():
    calls = timer_calls()
    assert len(calls) >= 4          # the recovery node, lost_service, kidnap_monitor, ...
    assert [c for c in calls if not c[2]] == []
