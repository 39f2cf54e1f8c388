"""Load a node's validated config from its private ROS parameters."""
import sys

import rospy

from lost_and_found.core.config import ConfigError, config_from_params


def load_config(cls, namespace='~', fallbacks=None):
    """Build config ``cls`` from the parameters under ``namespace``.

    ``fallbacks`` maps a key to a function of the parameters read, giving the value to use
    when the namespace does not set that key (None: the field's default).

    Unknown keys are warned about once each. A bad value makes the node refuse to start: every
    problem is logged with ``logfatal`` naming the key and the value, then the process exits 1.
    """
    params = rospy.get_param(namespace, {})
    for key, fallback in (fallbacks or {}).items() if isinstance(params, dict) else ():
        if key not in params:
            value = fallback(params)
            if value is not None:
                params[key] = value
    try:
        return config_from_params(cls, params, warn=rospy.logwarn)
    except ConfigError as error:
        for problem in error.problems:
            rospy.logfatal('%s: bad parameter %s', rospy.get_name(), problem)
        rospy.logfatal('%s: refusing to start with a bad configuration', rospy.get_name())
        sys.exit(1)
