"""Load a script of tools/ as a module, for the unit tests of the tools."""
import importlib.util
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def load_tool(name):
    """The module of ``tools/<name>.py`` (the tools are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, 'tools',
                                                                     name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
