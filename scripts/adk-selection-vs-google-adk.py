#!/usr/bin/env python3
# Runs the find_agent_to_run and is_transferable_across_agent_tree cases of
# ../shared/fixtures/peer-cases/adk-selection.yaml against the real google-adk 2.13.0
# (SPEC §11's normative source) and compares with the python_2026_router values that
# tests/all/conformance/adk.rs checks arbor against. Not part of CI (it needs google-adk):
#
#   python3 -m venv /tmp/adkvenv && /tmp/adkvenv/bin/pip install google-adk==2.13.0 pyyaml
#   /tmp/adkvenv/bin/python scripts/adk-selection-vs-google-adk.py
#
# Prints a DIFF line per disagreement and `adk 2.13.0: N agree, M differ, K skipped`
# (skipped: find_matching_function_call cases, and those whose router value is
# not_applicable). Case trees map `kind: non_llm` to a SequentialAgent.
import os, sys

import yaml
from google.adk.agents import LlmAgent, BaseAgent, SequentialAgent
from google.adk.agents._agent_router import find_agent_to_run, is_transferable_across_agent_tree
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.session import Session
from google.adk.apps.app import ResumabilityConfig
from google.genai import types

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'shared', 'fixtures', 'peer-cases', 'adk-selection.yaml')

def build(spec):
    subs=[build(s) for s in spec.get('sub_agents',[]) or []]
    if spec.get('kind')=='non_llm':
        a=SequentialAgent(name=spec['name'], sub_agents=subs)
    else:
        kw=dict(name=spec['name'], model='gemini-2.0-flash', sub_agents=subs,
                disallow_transfer_to_parent=bool(spec.get('disallow_transfer_to_parent')),
                disallow_transfer_to_peers=bool(spec.get('disallow_transfer_to_peers')))
        if spec.get('mode'): kw['mode']=spec['mode']
        a=LlmAgent(**kw)
    return a

def event(spec, i):
    parts=[]
    if spec.get('text') is not None: parts.append(types.Part(text=spec['text']))
    for c in spec.get('function_calls',[]) or []:
        parts.append(types.Part(function_call=types.FunctionCall(id=c['id'], name=c['name'], args=c.get('args') or {})))
    for r in spec.get('function_responses',[]) or []:
        parts.append(types.Part(function_response=types.FunctionResponse(id=r['id'], name=r['name'], response={})))
    content=types.Content(role=spec.get('role') or ('user' if spec.get('author')=='user' else 'model'), parts=parts) if parts else None
    act=spec.get('actions') or {}
    actions=EventActions(transfer_to_agent=act.get('transfer_to_agent'), rewind_before_invocation_id=act.get('rewind_before_invocation_id'), end_of_agent=act.get('end_of_agent'))
    return Event(id=f"e{i}", author=spec.get('author'), content=content, invocation_id=spec.get('invocation_id') or f"inv_{i}", actions=actions, error_code=spec.get('error_code'), error_message=spec.get('error_message'))

cases=yaml.safe_load(open(CASES))
ok=bad=skip=0
for c in cases:
    fn=c['function']; want=c.get('expected_by_impl',{}).get('python_2026_router')
    if fn not in ('find_agent_to_run','is_transferable_across_agent_tree'): skip+=1; continue
    if want=='not_applicable': skip+=1; continue
    try:
        root=build(c['input']['tree'])
        if fn=='is_transferable_across_agent_tree':
            got=is_transferable_across_agent_tree(root.find_agent(c['input']['agent']))
        else:
            hist=[dict(e) for e in c['input'].get('history',[])]
            nm=c['input'].get('new_message')
            if nm: hist.append(dict(nm, author='user'))
            events=[event(e,i) for i,e in enumerate(hist)]
            s=Session(id='s', app_name='a', user_id='u', events=events)
            rc=ResumabilityConfig(is_resumable=bool(c['input'].get('resumable')))
            got=find_agent_to_run(s, root, rc).name
    except Exception as e:
        got=f"ERROR {type(e).__name__}: {e}"
    if got==want: ok+=1
    else:
        bad+=1; print("DIFF", c['name'], "want", want, "got", got)
print(f"adk 2.13.0: {ok} agree, {bad} differ, {skip} skipped")
sys.exit(1 if bad else 0)
