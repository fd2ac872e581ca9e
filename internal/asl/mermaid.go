package asl

import (
	"fmt"
	"strings"
)

// Mermaid renders sm as a Mermaid flowchart: one node per state (nested
// Parallel branches and Map processors as subgraphs), Next, Choice rule,
// Default and Catch edges (Catch edges dotted and labelled with
// ErrorEquals), and start, end and failed terminals. Output is
// deterministic: it follows definition order.
func Mermaid(sm *StateMachine) string {
	g := &mermaidGen{}
	g.line("", "flowchart TD")
	g.line("  ", `__start__(("start"))`)
	g.line("  ", `__end__(("end"))`)
	g.line("  ", `__failed__(("failed"))`)
	start := g.machine(sm, "  ", true)
	g.line("  ", "__start__ --> "+start)
	return g.b.String()
}

type mermaidGen struct {
	b    strings.Builder
	next int
}

func (g *mermaidGen) line(indent, s string) {
	g.b.WriteString(indent)
	g.b.WriteString(s)
	g.b.WriteByte('\n')
}

func (g *mermaidGen) id() string {
	g.next++
	return fmt.Sprintf("s%d", g.next)
}

// machine writes the nodes and edges of sm and returns its start node.
// Terminal edges go to the shared end/failed nodes only at the top level.
func (g *mermaidGen) machine(sm *StateMachine, indent string, top bool) string {
	ids := map[string]string{}
	for _, name := range sm.Order {
		ids[name] = g.id()
	}
	for _, name := range sm.Order {
		st := sm.States[name]
		id := ids[name]
		g.line(indent, id+nodeShape(st))
		for i, b := range st.Branches {
			g.subgraph(indent, id, fmt.Sprintf("%s %s", name, branchLabel(i)), b)
		}
		if st.ItemProcessor != nil {
			g.subgraph(indent, id, name+" ItemProcessor", st.ItemProcessor)
		}
	}
	for _, name := range sm.Order {
		st := sm.States[name]
		id := ids[name]
		for _, t := range st.transitions() {
			switch {
			case t.catch:
				g.line(indent, fmt.Sprintf("%s -.->|%s| %s", id, mermaidText(t.label), ids[t.target]))
			case t.label != "":
				g.line(indent, fmt.Sprintf("%s -->|%s| %s", id, mermaidText(t.label), ids[t.target]))
			default:
				g.line(indent, fmt.Sprintf("%s --> %s", id, ids[t.target]))
			}
		}
		if !top {
			continue
		}
		switch {
		case st.Type == typeFail:
			g.line(indent, id+" --> __failed__")
		case st.End || st.Type == typeSucceed:
			g.line(indent, id+" --> __end__")
		}
	}
	return ids[sm.StartAt]
}

func (g *mermaidGen) subgraph(indent, parent, title string, sm *StateMachine) {
	sg := g.id()
	g.line(indent, fmt.Sprintf("subgraph %s[%s]", sg, mermaidText(title)))
	start := g.machine(sm, indent+"  ", false)
	g.line(indent, "end")
	g.line(indent, fmt.Sprintf("%s -.-> %s", parent, start))
}

func nodeShape(st *State) string {
	label := mermaidText(st.Name + " (" + st.Type + ")")
	switch st.Type {
	case typeChoice:
		return "{" + label + "}"
	case typeSucceed, typeFail:
		return "([" + label + "])"
	case typeParallel, typeMap:
		return "[[" + label + "]]"
	}
	return "[" + label + "]"
}

// mermaidText quotes a label, escaping characters Mermaid would parse.
func mermaidText(s string) string {
	r := strings.NewReplacer(`"`, "#quot;", "\n", " ", "|", "#124;", "<", "#lt;", ">", "#gt;")
	return `"` + r.Replace(s) + `"`
}
