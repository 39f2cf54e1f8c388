"""What every suite writes: JSON with every trial, a Markdown table, CDF plots.

Statistics skip missing values (``None``: a trial where the event never happened) and say how
many values they are over, so that a median is never quoted without its sample size.
"""
import json
import math
import os

import numpy as np


def finite(values):
    """The values that are real finite numbers (None and NaN dropped)."""
    return [float(v) for v in values
            if v is not None and not isinstance(v, bool) and math.isfinite(float(v))]


def percentile(values, q):
    """The ``q``-th percentile (0-100, linear interpolation) of the finite values, or None."""
    data = finite(values)
    return float(np.percentile(data, q)) if data else None


def stats(values):
    """n, median, p90, p95, p99, mean, min and max of the finite values (None when empty)."""
    data = finite(values)
    out = {'n': len(data)}
    for name, q in (('median', 50), ('p90', 90), ('p95', 95), ('p99', 99)):
        out[name] = percentile(data, q)
    out['mean'] = float(np.mean(data)) if data else None
    out['min'] = min(data) if data else None
    out['max'] = max(data) if data else None
    return out


def rate(hits, total):
    """hits / total, or None when there is nothing to divide by."""
    return float(hits) / total if total else None


def fmt(value, digits=2, unit=''):
    """A table cell: '-' for None, percent for 'unit=%', else the rounded number."""
    if value is None:
        return '-'
    if unit == '%':
        return '%.*f %%' % (max(digits - 1, 0), 100.0 * value)
    return ('%.*f' % (digits, value)) + (' ' + unit if unit else '')


def markdown_table(headers, rows):
    """A GitHub Markdown table (every cell converted with str)."""
    lines = ['| ' + ' | '.join(str(h) for h in headers) + ' |',
             '|' + '|'.join('---' for _ in headers) + '|']
    lines += ['| ' + ' | '.join(str(c) for c in row) + ' |' for row in rows]
    return '\n'.join(lines)


def _jsonable(value):
    """numpy scalars and arrays, tuples and NaN made JSON-safe (NaN/inf become null)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_json(path, data):
    """Write ``data`` as indented JSON (strict: no NaN)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, 'w') as stream:
        json.dump(_jsonable(data), stream, indent=1, sort_keys=False, allow_nan=False)
        stream.write('\n')


def write_markdown(path, title, command, markdown, plots=(), wall_time=None):
    """Write a suite's Markdown file: its title, the command (and wall time), its tables and
    its plots (file names beside it)."""
    with open(path, 'w') as stream:
        stream.write('# %s\n\n' % title)
        stream.write('Command: `%s`' % command)
        stream.write('  \nWall time: %.0f s\n\n' % wall_time if wall_time is not None else '\n\n')
        stream.write(markdown.rstrip() + '\n')
        for plot in plots:
            stream.write('\n![%s](%s)\n' % (os.path.splitext(plot)[0], plot))


def read_json(path):
    """The JSON document at ``path``.

    Raises:
        ValueError: naming the file when it cannot be read or is not JSON.
    """
    try:
        with open(path) as stream:
            return json.load(stream)
    except OSError as error:
        raise ValueError('%s: cannot read: %s' % (path, error.strerror)) from None
    except ValueError as error:
        raise ValueError('%s: not valid JSON: %s' % (path, error)) from None


def cdf_plot(path, series, xlabel, title, censor=None, marks=None):
    """Empirical CDFs, one line per series, over *all* trials of each series.

    Args:
        path: PNG to write.
        series: name -> list of values; None (the event never happened) counts in the
            denominator, so a line that ends below 1 shows the misses.
        xlabel, title: labels.
        censor: draw a dashed vertical line here (e.g. the time budget).
        marks: name -> x of a vertical dotted line (e.g. a target).
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for name, values in series.items():
        total = len(values)
        data = sorted(finite(values))
        if not total:
            continue
        xs = [0.0] + [v for v in data for _ in (0, 1)]
        ys = [0.0] + [y for i in range(len(data)) for y in (i / total, (i + 1) / total)]
        if data:
            xs.append(max(data[-1], censor or data[-1]))
            ys.append(len(data) / total)
        ax.plot(xs, ys, label='%s (%d/%d)' % (name, len(data), total))
    if censor is not None:
        ax.axvline(censor, color='grey', linestyle='--', linewidth=0.8)
    for name, x in (marks or {}).items():
        ax.axvline(x, color='black', linestyle=':', linewidth=0.8)
        ax.text(x, 0.02, ' ' + name, rotation=90, va='bottom', fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel('fraction of trials')
    ax.set_ylim(0.0, 1.02)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc='lower right', fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
