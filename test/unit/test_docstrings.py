"""Every public module, class, function and method of the package has a docstring."""
import importlib
import inspect
import pkgutil

import lost_and_found


def public_members():
    for info in pkgutil.walk_packages(lost_and_found.__path__, 'lost_and_found.'):
        if info.name.endswith(('.msg', '.srv')) or '.msg.' in info.name or '.srv.' in info.name:
            continue  # generated message classes
        module = importlib.import_module(info.name)
        yield info.name, module
        for name, member in vars(module).items():
            if name.startswith('_') or getattr(member, '__module__', None) != module.__name__:
                continue
            if inspect.isclass(member) or inspect.isfunction(member):
                yield '%s.%s' % (info.name, name), member
            if inspect.isclass(member):
                for attr, value in vars(member).items():
                    if attr.startswith('_') or not (inspect.isfunction(value) or
                                                    isinstance(value, property)):
                        continue
                    yield '%s.%s.%s' % (info.name, name, attr), value


def test_every_public_item_is_documented():
    missing = [name for name, member in public_members()
               if not (inspect.getdoc(member) or '').strip()]
    assert missing == []
