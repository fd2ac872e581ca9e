// Package architecture holds no code: its test enforces the house rules
// on who may import what.
package architecture
