"""Validation and loading shared by every node's frozen config dataclass.

Each node's config is a frozen dataclass in ``core/`` whose defaults are in SI units. Its
``validate()`` collects every problem with a :class:`Checker` and raises one
:class:`ConfigError`; :func:`config_from_params` builds it from the (possibly nested) dict of
a node's private parameters, warns about unknown keys and coerces YAML numbers to the
field's type. A field whose parameter name differs from its Python name (for example the lost
detector's ``modified_prob_classifier/prob_thresh``) says so with ``param_field``.
"""
import dataclasses
import logging
import math

import yaml

_log = logging.getLogger('rosout')

#: Largest standard deviation (m) of x and y of a pose any node sends to amcl: a wider one
#: says nothing a global localization would not (and squared it must stay a number).
MAX_SIGMA_XY = 10.0


class ConfigError(ValueError):
    """Every problem found in one config, each naming the key and the bad value."""

    def __init__(self, problems):
        """Keep the list of problems; the message joins them."""
        self.problems = list(problems)
        super().__init__('; '.join(self.problems))


def param_field(param, default):
    """Declare a dataclass field whose ROS parameter name is ``param`` (e.g. ``a/b``)."""
    return dataclasses.field(default=default, metadata={'param': param})


def param_name(field):
    """The ROS parameter name of a dataclass field."""
    return field.metadata.get('param', field.name)


class Checker:
    """Collects config problems so that ``validate()`` can report all of them at once."""

    def __init__(self, config):
        """Check ``config``; problems name each key by its ROS parameter name."""
        self._config = config
        self._names = {f.name: param_name(f) for f in dataclasses.fields(config)}
        self.problems = []

    def _value(self, name):
        return getattr(self._config, name)

    def require(self, ok, name, must):
        """Record a problem with field ``name`` unless ``ok``; ``must`` says what it must be."""
        if not ok:
            self.problems.append('%s=%r: must %s' % (
                self._names.get(name, name), self._value(name), must))

    def problem(self, text):
        """Record a free-text problem that involves several fields."""
        self.problems.append(text)

    def finite(self, name):
        """The field must be a finite number."""
        value = self._value(name)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        self.require(ok and math.isfinite(value), name, 'be a finite number')
        return ok and math.isfinite(value)

    def positive(self, name):
        """The field must be a finite number > 0."""
        if self.finite(name):
            self.require(self._value(name) > 0, name, 'be > 0')

    def non_negative(self, name):
        """The field must be a finite number >= 0."""
        if self.finite(name):
            self.require(self._value(name) >= 0, name, 'be >= 0')

    def in_range(self, name, low, high, low_open=False, high_open=False):
        """The field must lie in [low, high] (or the open variants)."""
        if not self.finite(name):
            return
        value = self._value(name)
        ok = (value > low if low_open else value >= low) and \
            (value < high if high_open else value <= high)
        self.require(ok, name, 'lie in %s%g, %g%s' % (
            '(' if low_open else '[', low, high, ')' if high_open else ']'))

    def sigma_xy(self, name):
        """The field is the standard deviation (m) of x and y of a pose sent to amcl: in
        (0, :data:`MAX_SIGMA_XY`]."""
        self.in_range(name, 0.0, MAX_SIGMA_XY, low_open=True)

    def sigma_yaw(self, name):
        """The field is the standard deviation (rad) of the yaw of a pose sent to amcl: in
        (0, pi]."""
        self.in_range(name, 0.0, math.pi, low_open=True)

    def positive_int(self, name):
        """The field must be an integer >= 1."""
        self._int_at_least(name, 1)

    def non_negative_int(self, name):
        """The field must be an integer >= 0."""
        self._int_at_least(name, 0)

    def _int_at_least(self, name, low):
        value = self._value(name)
        self.require(isinstance(value, int) and not isinstance(value, bool) and value >= low,
                     name, 'be an integer >= %d' % low)

    def non_empty(self, name):
        """The field must be a non-empty string."""
        value = self._value(name)
        self.require(isinstance(value, str) and value.strip() != '', name,
                     'be a non-empty string')

    def frame(self, name, optional=False):
        """The field must be a tf frame name: a non-empty string without a leading '/' or any
        whitespace (tf2 refuses both, and every lookup would then fail with a warning only);
        with ``optional``, '' is allowed too."""
        value = self._value(name)
        if optional and value == '':
            return
        self.require(frame_problem(value) is None, name, frame_problem(value) or '')

    def one_of(self, name, choices):
        """The field must be one of ``choices``."""
        self.require(self._value(name) in choices, name, 'be one of %s' % ', '.join(
            repr(c) for c in choices))

    def done(self):
        """Raise one ConfigError listing every recorded problem, if any."""
        if self.problems:
            raise ConfigError(self.problems)


def frame_problem(value):
    """What is wrong with ``value`` as a tf frame name (see :meth:`Checker.frame`), or None."""
    if not isinstance(value, str) or not value.strip():
        return 'be a non-empty string'
    if value.startswith('/'):
        return 'be a frame name without a leading "/" (tf2 refuses it): %r' % value.lstrip('/')
    if any(c.isspace() for c in value):
        return 'be a frame name without spaces'
    return None


#: The largest integer parameter (the parameter server's XML-RPC integers are 32-bit).
INT_LIMIT = 2 ** 31 - 1


def flatten(params, prefix=''):
    """Flatten nested parameter dicts into ``{'a/b': value}``."""
    flat = {}
    for key, value in params.items():
        name = '%s/%s' % (prefix, key) if prefix else str(key)
        if isinstance(value, dict):
            flat.update(flatten(value, name))
        else:
            flat[name] = value
    return flat


def _coerce(name, value, default):
    """Convert a YAML value to the type of ``default``; return (value, problem or None)."""
    def bad(must):
        return value, '%s=%r: must %s' % (name, value, must)

    if isinstance(default, bool):
        return (value, None) if isinstance(value, bool) else bad('be true or false')
    if isinstance(default, int):
        if isinstance(value, bool):
            return bad('be an integer')
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int):
            return bad('be an integer')
        if abs(value) > INT_LIMIT:
            return bad('be an integer within +-%d' % INT_LIMIT)
        return value, None
    if isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value), None
        return bad('be a number')
    if isinstance(default, str):
        return (value, None) if isinstance(value, str) else bad('be a string')
    if isinstance(default, tuple):
        if not isinstance(value, (list, tuple)):
            return bad('be a list')
        items = []
        sample = default[0] if default else None
        for item in value:
            if isinstance(sample, (int, float)) and not isinstance(sample, bool):
                if isinstance(item, bool) or not isinstance(item, (int, float)):
                    return bad('be a list of numbers')
                item = float(item) if isinstance(sample, float) else item
            items.append(item)
        return tuple(items), None
    return value, None


def _kind(default):
    """What a parameter with this default must be, for a message."""
    if isinstance(default, bool):
        return 'be true or false'
    if isinstance(default, (int, float)):
        return 'be a number'
    if isinstance(default, tuple):
        return 'be a list'
    return 'be a string' if isinstance(default, str) else 'be a single value'


def config_from_params(cls, params, warn=_log.warning):
    """Build and validate config ``cls`` from a dict of a node's private parameters.

    Args:
        cls: a frozen config dataclass with defaults for every field and a ``validate()``.
        params: the node's private parameters, nested dicts allowed (``rospy.get_param('~')``).
        warn: called once per unknown key (a typo would otherwise be silently ignored).

    Returns:
        The validated config.

    Raises:
        ConfigError: naming every bad key and value.
    """
    flat = flatten(params or {})
    fields = {param_name(f): f for f in dataclasses.fields(cls)}
    kwargs, problems = {}, []
    for key in sorted(set(flat) - set(fields)):
        # A mapping under a parameter's own name (dock_pose: {x: 1, ...}), or a value where
        # a group of parameters belongs (scan_check: false): not a typo to skip, a mistake
        # that would leave the parameter at its default.
        owner = next((name for name in fields if key.startswith(name + '/')), None)
        members = sorted(name for name in fields if name.startswith(key + '/'))
        if owner is not None:
            problems.append('%s: must %s, not a mapping (found %s=%r)' % (
                owner, _kind(fields[owner].default), key, flat[key]))
        elif members:
            problems.append('%s=%r: is a group of parameters (%s), not a value' % (
                key, flat[key], ', '.join(members)))
        else:
            warn('unknown parameter %r ignored (known: %s)' % (key, ', '.join(sorted(fields))))
    for name, field in fields.items():
        if name not in flat:
            continue
        value, problem = _coerce(name, flat[name], field.default)
        if problem:
            problems.append(problem)
        kwargs[field.name] = value
    if problems:
        raise ConfigError(problems)
    config = cls(**kwargs)
    config.validate()
    return config


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last
    silently: a second ``fiducials:`` block would drop every tag of the first)."""

    def construct_mapping(self, node, deep=False):
        """The mapping of ``node``; ConstructorError on a repeated key."""
        seen = set()
        for key_node, _value in node.value:
            if key_node.tag == 'tag:yaml.org,2002:merge':
                continue                # "<<: *anchor" may be overridden by design
            key = self.construct_object(key_node, deep=deep)
            try:
                repeated = key in seen
                seen.add(key)
            except TypeError:           # an unhashable key: construct_mapping refuses it
                continue
            if repeated:
                raise yaml.constructor.ConstructorError(
                    'while constructing a mapping', node.start_mark,
                    'found the key %r a second time' % (key,), key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def safe_load_unique(stream):
    """yaml.safe_load, but a key given twice in one mapping raises yaml.YAMLError."""
    return yaml.load(stream, Loader=_UniqueKeyLoader)    # noqa: S506 - a SafeLoader
