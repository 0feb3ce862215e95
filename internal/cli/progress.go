package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// progressFlags are --progress and --no-progress: a bar on stderr is shown by default only
// when stderr is a terminal.
type progressFlags struct{ on, off bool }

func (pf *progressFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&pf.on, "progress", false, "show a progress bar on stderr even when it is not a terminal")
	cmd.Flags().BoolVar(&pf.off, "no-progress", false, "never show a progress bar")
}

// check refuses contradictory flags.
func (pf progressFlags) check() error {
	if pf.on && pf.off {
		return fmt.Errorf("--progress and --no-progress contradict each other; give one of them")
	}
	return nil
}

func (pf progressFlags) enabled(e *env) bool {
	switch {
	case pf.on:
		return true
	case pf.off:
		return false
	}
	return e.stderrTTY
}

// progress draws a bar of bytes processed, with rate and time left, and the number of items
// done and their rate in its description. It polls its sources, so the work it watches pays
// nothing for it. A nil *progress draws nothing.
type progress struct {
	bar   *progressbar.ProgressBar
	stop  chan struct{}
	done  chan struct{}
	start time.Time
}

// startProgress starts a bar for total bytes (a spinner when total < 0) that polls bytes() and,
// if it is not nil, items() ten times a second until finish.
func startProgress(w io.Writer, verb string, total int64, bytes func() int64, items func() uint64) *progress {
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(verb),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	)
	p := &progress{bar: bar, stop: make(chan struct{}), done: make(chan struct{}), start: time.Now()}
	go func() {
		defer close(p.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if items != nil {
				n := items()
				rate := float64(n) / max(time.Since(p.start).Seconds(), 1e-3)
				bar.Describe(fmt.Sprintf("%s %s items (%s/s)", verb, group(n), shortCount(rate)))
			}
			bar.Set64(bytes())
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// finish stops polling and clears the bar.
func (p *progress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.bar.Finish()
	p.bar.Exit()
}

// shortCount formats a count or rate with a k, M or G suffix: 1.23M.
func shortCount(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.3gG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
