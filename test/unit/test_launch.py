"""launch/lost_and_found.launch: every node, every remap through an <arg>."""
import os
import re
import xml.etree.ElementTree as ElementTree

import pytest

ROOT = os.path.join(os.path.dirname(__file__), '..', '..')
LAUNCH = os.path.join(ROOT, 'launch', 'lost_and_found.launch')
NODES = {'kidnap_monitor', 'lost_detector', 'lost_service', 'lost_and_found',
         'fiducial_localizer'}


@pytest.fixture(scope='module')
def launch():
    return ElementTree.parse(LAUNCH).getroot()


def test_all_five_nodes_with_executables(launch):
    nodes = {n.get('type'): n for n in launch.iter('node')}
    assert set(nodes) == NODES
    for name in NODES:
        assert nodes[name].get('pkg') == 'lost_and_found'
        assert os.access(os.path.join(ROOT, 'nodes', name), os.X_OK), name


def test_every_remap_and_param_file_comes_from_an_arg(launch):
    args = {a.get('name') for a in launch.iter('arg')}
    for remap in launch.iter('remap'):
        match = re.fullmatch(r'\$\(arg (\w+)\)', remap.get('to'))
        assert match and match.group(1) in args, remap.attrib
    for rosparam in launch.iter('rosparam'):
        match = re.fullmatch(r'\$\(arg (\w+)\)', rosparam.get('file'))
        assert match and match.group(1) in args, rosparam.attrib


def test_default_config_files_exist(launch):
    for arg in launch.iter('arg'):
        default = arg.get('default', '')
        if default.startswith('$(find lost_and_found)/'):
            path = os.path.join(ROOT, default[len('$(find lost_and_found)/'):])
            assert os.path.isfile(path), path
