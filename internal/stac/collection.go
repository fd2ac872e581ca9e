package stac

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Collection is the STAC Collection of one dataset: its id, the extent of
// every item promoted into it, and a link to where the items are. It holds
// no link per item: it is rewritten whenever its extent grows, and a list
// of every item would make each promotion rewrite all of them (items point
// to it instead, with "collection" and "parent" links).
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
	if c.Links == nil {
		c.Links = []Link{}
	}
	if c.StacExtensions == nil {
		c.StacExtensions = []string{}
	}
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
