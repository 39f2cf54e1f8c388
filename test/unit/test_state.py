"""Every legal and illegal state transition, and the StateMachine that applies them."""
import itertools

import pytest

from lost_and_found.state import (
    LOCALIZED, State, StateMachine, TRANSITIONS, parse_state, parse_states, states_text,
    transition_error)

# The legal transitions, written out independently of state.TRANSITIONS.
LEGAL = {
    ('IDLE', 'NAVIGATING'), ('IDLE', 'FLYING'), ('IDLE', 'LOST'),
    ('NAVIGATING', 'IDLE'), ('NAVIGATING', 'FLYING'), ('NAVIGATING', 'LOST'),
    ('FLYING', 'IDLE'), ('FLYING', 'NAVIGATING'), ('FLYING', 'LOST'), ('FLYING', 'NEED_HELP'),
    ('LOST', 'IDLE'), ('LOST', 'FLYING'), ('LOST', 'LOCALIZING'), ('LOST', 'NEED_HELP'),
    ('LOCALIZING', 'IDLE'), ('LOCALIZING', 'FLYING'), ('LOCALIZING', 'LOST'),
    ('NEED_HELP', 'IDLE'), ('NEED_HELP', 'FLYING'), ('NEED_HELP', 'LOCALIZING'),
}
PAIRS = [(a, b) for a, b in itertools.product(State, State) if a != b]


@pytest.mark.parametrize('current,target', PAIRS, ids=lambda s: s.value)
def test_every_transition_is_legal_or_refused_with_a_reason(current, target):
    error = transition_error(current, target)
    machine = StateMachine(current)
    accepted, reason = machine.request(target)
    if (current.value, target.value) in LEGAL:
        assert error is None
        assert accepted and reason == ''
        assert machine.state == target and machine.previous == current
    else:
        assert error is not None and current.value in error and target.value in error
        assert not accepted and reason == error
        assert machine.state == current, 'an illegal request must not be applied'


def test_staying_is_a_legal_no_op():
    machine = StateMachine(State.LOST)
    assert machine.request(State.LOST) == (True, '')
    assert machine.state == State.LOST and machine.previous == State.LOST


def test_every_state_has_a_row_and_flying_is_reachable_from_the_ground():
    assert set(TRANSITIONS) == set(State)
    for state in State:
        if state != State.FLYING:
            assert State.FLYING in TRANSITIONS[state]
    assert LOCALIZED == {State.IDLE, State.NAVIGATING}


@pytest.mark.parametrize('text,expected', [
    ('LOST', State.LOST), ('lost', State.LOST), (' need_help ', State.NEED_HELP),
    ('lostt', None), ('', None), (None, None)])
def test_parse_state(text, expected):
    assert parse_state(text) == expected


@pytest.mark.parametrize('text,expected', [
    ('', (frozenset(), None)), ('  ', (frozenset(), None)),
    ('IDLE', (frozenset({State.IDLE}), None)),
    ('idle, NAVIGATING', (frozenset({State.IDLE, State.NAVIGATING}), None)),
    ('IDLE lostt', (frozenset(), 'lostt'))])
def test_parse_states(text, expected):
    assert parse_states(text) == expected


def test_states_text_round_trips():
    assert states_text(None) == ''
    assert states_text(State.LOST) == 'LOST'
    assert states_text(LOCALIZED) == 'IDLE NAVIGATING'
    assert parse_states(states_text(LOCALIZED)) == (LOCALIZED, None)
