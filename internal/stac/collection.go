package stac

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"
)

// Collection is the STAC Collection of one dataset: its id, the extent of
// every item included in it, its place in the tree (self, root and parent
// links) and an "item" link per item. Items point back to it with
// "collection" and "parent" links.
type Collection struct {
	Type           string   `json:"type"`
	StacVersion    string   `json:"stac_version"`
	StacExtensions []string `json:"stac_extensions"`
	ID             string   `json:"id"`
	Title          string   `json:"title,omitempty"`
	Description    string   `json:"description"`
	License        string   `json:"license"`
	Extent         Extent   `json:"extent"`
	Links          []Link   `json:"links"`
}

// Extent is a collection's spatial and temporal extent.
type Extent struct {
	Spatial  SpatialExtent  `json:"spatial"`
	Temporal TemporalExtent `json:"temporal"`
}

// SpatialExtent holds one overall bbox (WGS 84).
type SpatialExtent struct {
	BBox [][]float64 `json:"bbox"`
}

// TemporalExtent holds one overall interval; its end is open (null): the
// dataset grows as files arrive.
type TemporalExtent struct {
	Interval [][2]*string `json:"interval"`
}

// CollectionFileName is the name of a collection document under its
// directory ("collections/<dataset>/collection.json").
const CollectionFileName = "collection.json"

// NewCollection is the collection of dataset id before any item.
func NewCollection(id string) *Collection {
	return &Collection{
		Type: "Collection", StacVersion: Version, StacExtensions: []string{}, ID: id,
		Description: fmt.Sprintf("Cloud-native outputs of dataset %q, converted by geomigrate; each output has a STAC Item beside it (<output>%s).", id, ItemSuffix),
		// STAC 1.0.0's word for a license not stated as SPDX; the source
		// archive's own terms apply and are not known to the pipeline.
		License: "proprietary",
		Extent: Extent{
			Spatial:  SpatialExtent{BBox: [][]float64{{-180, -90, 180, 90}}},
			Temporal: TemporalExtent{Interval: [][2]*string{{nil, nil}}},
		},
		Links: []Link{},
	}
}

// ParseCollection reads a collection document.
func ParseCollection(b []byte) (*Collection, error) {
	var c Collection
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("stac.ParseCollection: %w", err)
	}
	if c.Type != "Collection" || c.ID == "" || len(c.Extent.Spatial.BBox) == 0 || len(c.Extent.Temporal.Interval) == 0 {
		return nil, fmt.Errorf("stac.ParseCollection: not a STAC collection")
	}
	c.Links, c.StacExtensions = nonNil(c.Links), nonNil(c.StacExtensions)
	return &c, nil
}

// Include widens the collection's extent to cover an item with the given
// WGS 84 bbox (nil: no footprint) and datetime, and reports whether it
// changed. A fresh collection (whole-world bbox, no start) takes the
// item's extent as its own.
func (c *Collection) Include(bbox []float64, when time.Time) bool {
	changed := false
	if len(bbox) == 4 {
		cur := c.Extent.Spatial.BBox[0]
		if c.fresh() {
			c.Extent.Spatial.BBox[0] = append([]float64(nil), bbox...)
			changed = true
		} else if len(cur) == 4 {
			u := []float64{math.Min(cur[0], bbox[0]), math.Min(cur[1], bbox[1]), math.Max(cur[2], bbox[2]), math.Max(cur[3], bbox[3])}
			for i := range u {
				if u[i] != cur[i] {
					changed = true
				}
			}
			c.Extent.Spatial.BBox[0] = u
		}
	}
	if !when.IsZero() {
		t := rfc3339(when)
		start := c.Extent.Temporal.Interval[0][0]
		if start == nil {
			c.Extent.Temporal.Interval[0][0] = &t
			changed = true
		} else if st, err := time.Parse(time.RFC3339Nano, *start); err != nil || when.Before(st) {
			c.Extent.Temporal.Interval[0][0] = &t
			changed = true
		}
	}
	return changed
}

// fresh reports whether no item has been included yet: the extent is
// still NewCollection's (the whole world, no start).
func (c *Collection) fresh() bool {
	b := c.Extent.Spatial.BBox[0]
	return c.Extent.Temporal.Interval[0][0] == nil && len(b) == 4 && b[0] == -180 && b[1] == -90 && b[2] == 180 && b[3] == 90
}

// JSON is the collection as indented JSON with a final newline.
func (c *Collection) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("stac.Collection.JSON: %w", err)
	}
	return append(b, '\n'), nil
}

// Link relations of the tree.
const (
	RelSelf   = "self"
	RelRoot   = "root"
	RelParent = "parent"
	RelChild  = "child"
	RelItem   = "item"
)

// RootTitle is the title of the root catalog, in its links too.
const RootTitle = "geomigrate outputs"

// SetNavigation sets the collection's self, root and parent links (the
// parent is the root catalog), replacing any it had.
func (c *Collection) SetNavigation(selfHref, rootHref string) {
	c.Links = navigation(c.Links, selfHref, rootHref, true)
}

// AddItem links an item (its href relative to the collection) and reports
// whether the link is new. Item links are kept sorted by href, so the same
// items always give the same bytes.
func (c *Collection) AddItem(href string) bool {
	var added bool
	c.Links, added = addLink(c.Links, Link{Rel: RelItem, Href: href, Type: MediaGeoJSON})
	return added
}

// Catalog is the root of the tree: one "child" link per collection.
type Catalog struct {
	Type           string   `json:"type"`
	StacVersion    string   `json:"stac_version"`
	StacExtensions []string `json:"stac_extensions"`
	ID             string   `json:"id"`
	Title          string   `json:"title,omitempty"`
	Description    string   `json:"description"`
	Links          []Link   `json:"links"`
}

// CatalogFileName is the name of the root catalog under the destination
// prefix.
const CatalogFileName = "catalog.json"

// NewCatalog is the root catalog before any collection.
func NewCatalog() *Catalog {
	c := &Catalog{
		Type: "Catalog", StacVersion: Version, StacExtensions: []string{}, ID: "geomigrate", Title: RootTitle,
		Description: "Cloud-native outputs converted by geomigrate: one collection per dataset, one item per output.",
		Links:       []Link{},
	}
	c.Links = navigation(c.Links, "./"+CatalogFileName, "./"+CatalogFileName, false)
	return c
}

// ParseCatalog reads a catalog document.
func ParseCatalog(b []byte) (*Catalog, error) {
	var c Catalog
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("stac.ParseCatalog: %w", err)
	}
	if c.Type != "Catalog" || c.ID == "" {
		return nil, fmt.Errorf("stac.ParseCatalog: not a STAC catalog")
	}
	c.Links, c.StacExtensions = nonNil(c.Links), nonNil(c.StacExtensions)
	return &c, nil
}

// AddChild links a collection (its href relative to the catalog) and
// reports whether the link is new.
func (c *Catalog) AddChild(href, title string) bool {
	var added bool
	c.Links, added = addLink(c.Links, Link{Rel: RelChild, Href: href, Type: MediaJSON, Title: title})
	return added
}

// JSON is the catalog as indented JSON with a final newline.
func (c *Catalog) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("stac.Catalog.JSON: %w", err)
	}
	return append(b, '\n'), nil
}

// navigation replaces the self, root (and parent) links of links.
func navigation(links []Link, selfHref, rootHref string, parent bool) []Link {
	nav := []Link{{Rel: RelSelf, Href: selfHref, Type: MediaJSON}, {Rel: RelRoot, Href: rootHref, Type: MediaJSON, Title: RootTitle}}
	if parent {
		nav = append(nav, Link{Rel: RelParent, Href: rootHref, Type: MediaJSON, Title: RootTitle})
	}
	for _, l := range links {
		if l.Rel != RelSelf && l.Rel != RelRoot && l.Rel != RelParent {
			nav = append(nav, l)
		}
	}
	return nav
}

// addLink adds l unless a link of its relation and href is there, keeping
// the links of that relation sorted by href after the others.
func addLink(links []Link, l Link) ([]Link, bool) {
	for _, have := range links {
		if have.Rel == l.Rel && have.Href == l.Href {
			return links, false
		}
	}
	links = append(links, l)
	sort.SliceStable(links, func(i, j int) bool {
		ri, rj := links[i].Rel == l.Rel, links[j].Rel == l.Rel
		if ri != rj {
			return rj
		}
		return ri && links[i].Href < links[j].Href
	})
	return links, true
}

// nonNil is s, or an empty slice for nil: a parsed document writes back
// "[]" where it read none, as the schemas want.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
