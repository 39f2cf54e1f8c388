"""Load a node's validated config from its private ROS parameters."""
import sys

import rospy

from lost_and_found.core.config import ConfigError, config_from_params


def load_config(cls, namespace='~'):
    """Build config ``cls`` from the parameters under ``namespace``.

    Unknown keys are warned about once each. A bad value makes the node refuse to start: every
    problem is logged with ``logfatal`` naming the key and the value, then the process exits 1.
    """
    params = rospy.get_param(namespace, {})
    try:
        return config_from_params(cls, params, warn=rospy.logwarn)
    except ConfigError as error:
        for problem in error.problems:
            rospy.logfatal('%s: bad parameter %s', rospy.get_name(), problem)
        rospy.logfatal('%s: refusing to start with a bad configuration', rospy.get_name())
        sys.exit(1)
