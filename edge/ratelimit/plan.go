package ratelimit

import (
	"sync"

	"github.com/posedge/posedge/edge/redisdb"
)

// plan is everything about a decision that depends only on the terminal
// and the action: its levels, the script call over them (keys and
// limits), the metrics' action label. Built on a terminal's first
// request and kept, so that a decision builds no key string and boxes no
// limit (issue 26: the lookup's CPU). Read-only once built.
type plan struct {
	lv    []level
	call  redisdb.RateCall
	label string
}

// maxPlans bounds the plans kept: one per terminal and action in use (a
// store configures at most a few thousand terminals). Past it, a
// decision builds its plan and drops it, as before plans existed.
const maxPlans = 1 << 14

// plans are the kept plans by terminal id and action index.
type plans struct {
	mu sync.RWMutex
	m  map[string]*[numActions]*plan
	n  int // plans kept
}

// numActions counts "" (store and terminal levels only) and the actions.
const numActions = 5

// actionIndex is action's index in a terminal's plans; the action is
// known (AllowRead checked it).
func actionIndex(action string) int {
	switch action {
	case ActionScan:
		return 1
	case ActionPay:
		return 2
	case ActionRefund:
		return 3
	case ActionSync:
		return 4
	}
	return 0
}

// plan returns the plan of terminalID and action (both already valid).
func (l *Limiter) plan(terminalID, action string) *plan {
	i := actionIndex(action)
	l.plans.mu.RLock()
	var p *plan
	if byAction := l.plans.m[terminalID]; byAction != nil {
		p = byAction[i]
	}
	l.plans.mu.RUnlock()
	if p != nil {
		return p
	}
	p = l.buildPlan(terminalID, action)
	l.plans.mu.Lock()
	defer l.plans.mu.Unlock()
	if l.plans.n >= maxPlans {
		return p
	}
	if l.plans.m == nil {
		l.plans.m = map[string]*[numActions]*plan{}
	}
	byAction := l.plans.m[terminalID]
	if byAction == nil {
		byAction = new([numActions]*plan)
		l.plans.m[terminalID] = byAction
	}
	if byAction[i] == nil {
		byAction[i] = p
		l.plans.n++
	}
	return byAction[i]
}

// buildPlan makes the levels of a decision for terminalID and action:
// the store, the terminal, and the action's when there is one.
func (l *Limiter) buildPlan(terminalID, action string) *plan {
	lv := []level{l.store, l.newLevel(levelTerminal, "terminal", l.k.RateTerminal(terminalID), l.cfg.Terminal, "")}
	label := noAction
	if action != "" {
		lv = append(lv, l.newLevel(levelAction, action, l.k.RateAction(terminalID, action), l.cfg.Actions[action], action))
		label = action
	}
	return l.newPlan(lv, label)
}

func (l *Limiter) newPlan(lv []level, label string) *plan {
	levels := make([]redisdb.RateLevel, len(lv))
	for i, v := range lv {
		levels[i] = redisdb.RateLevel{Key: v.key, Limit: v.pol.Limit, WindowMillis: v.pol.Window.Milliseconds(), Scale: v.scale}
	}
	return &plan{lv: lv, call: redisdb.PrepareRate(l.k, levels), label: label}
}
