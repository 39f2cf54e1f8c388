"""Print "<passed> <failed>" for a pytest JUnit XML file or a rostest log.

Usage: junit_counts.py FILE.xml | junit_counts.py --rostest ROSTEST.log
"""
import re
import sys
import xml.etree.ElementTree as ElementTree


def junit_counts(path):
    """Count passed and failed (failures + errors) test cases in a JUnit XML file."""
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return 0, 0
    suites = [root] if root.tag == 'testsuite' else root.findall('testsuite')
    total = failed = skipped = 0
    for suite in suites:
        total += int(suite.get('tests', 0))
        failed += int(suite.get('failures', 0)) + int(suite.get('errors', 0))
        skipped += int(suite.get('skipped', 0))
    return total - failed - skipped, failed


def rostest_counts(path):
    """Count from the SUMMARY block rostest prints at the end of its output."""
    try:
        text = open(path, errors='replace').read()
    except OSError:
        return 0, 0
    summary = text[text.rfind('SUMMARY'):] if 'SUMMARY' in text else ''

    def field(name):
        match = re.search(r'\* %s: (\d+)' % name, summary)
        return int(match.group(1)) if match else 0
    tests, bad = field('TESTS'), field('ERRORS') + field('FAILURES')
    return max(tests - bad, 0), bad


if __name__ == '__main__':
    if sys.argv[1] == '--rostest':
        print('%d %d' % rostest_counts(sys.argv[2]))
    else:
        print('%d %d' % junit_counts(sys.argv[1]))
