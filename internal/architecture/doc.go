// Package architecture is imported by nothing: its tests enforce the house
// rules on who may import what (docs/decisions/0009, 0021) and keep code
// free of citations of documents outside the repository
// (docs/decisions/0001). The role table and the citation pattern live here
// so the rules read as data.
package architecture
