// Package plot draws the false-positive rate of Bloom filters as items grow, as SVG or PNG: the
// theoretical curve of each sizing (a function from items to rate), where a filter stands now,
// its target rate and where the curve crosses it, and where each sub-filter of a scalable
// filter starts. `bloom calc --plot`, `bloom info --plot` and bloomd's page draw with it.
//
// The y axis is logarithmic (rates from 1 down to a decade below the smallest rate drawn); the
// x axis is linear in items. The output is self-contained SVG 1.1 with no scripts and no
// outside references; each curve is one <polyline class="curve"> whose data-name attribute
// names it, and each marker a <circle> whose class says what it marks. The PNG (WritePNG) draws
// the same chart, pixel for pixel in the same geometry, with the same text in the Go fonts, so
// that it stands on its own (TestWritePNGText).
//
// Curves that coincide (within half a pixel everywhere, as Guava's and RedisBloom's sizings do
// when they give the same m and k) share one legend entry that names them all, and one colour,
// rather than one hiding under the other while the legend names both (TestCoincidingCurves).
package plot
