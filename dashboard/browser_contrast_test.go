package dashboard_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// colorScheme makes the tab's pages follow a system set to scheme,
// "light" or "dark" (prefers-color-scheme).
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	})
}

// contrastJS defines contrast(fg, bg, opacity), the WCAG contrast ratio of
// two computed colors ("rgb(…)" or "rgba(…)"), fg drawn over bg at its
// alpha times opacity.
const contrastJS = `
	const parse = (s) => { const m = s.match(/[\d.]+/g).map(Number); return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1}; };
	const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
	const contrast = (fg, bg, opacity) => {
		const f = parse(fg), b = parse(bg), a = f.a * (opacity === undefined ? 1 : opacity);
		const over = {r: f.r * a + b.r * (1 - a), g: f.g * a + b.g * (1 - a), b: f.b * a + b.b * (1 - a)};
		const x = lum(over), y = lum(b);
		return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
	};`

// fieldPages are pages with text fields, selects and a text area.
func fieldPages(t *testing.T) (base string, paths []string) {
	t.Helper()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_fields")
	ids := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	return "http://" + serve(t, st, serverOpts{allowPayloads: true}),
		[]string{"/dlq", pageURLOf("/dlq/message", "queue", q+"_dlq", "id", strconv.FormatInt(ids[0], 10), "payload", "1")}
}

// The borders of text fields, selects and text areas stand out from the
// page and from the field's own background by 3:1 at least (WCAG 1.4.11),
// in light and dark mode: they were 1.35:1 and 1.43:1.
func TestBrowserFieldBordersContrast(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	base, paths := fieldPages(t)
	for _, scheme := range []string{"light", "dark"} {
		for _, p := range paths {
			b.do(fmt.Sprintf("open %s in %s mode", p, scheme), colorScheme(scheme), chromedp.Navigate(base+p), chromedp.WaitVisible(chromedp.CSS("main")))
			got, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`(() => {`+contrastJS+`
				const page = getComputedStyle(document.body).backgroundColor, out = [];
				document.querySelectorAll("input:not([type=hidden]):not([type=checkbox]), select, textarea").forEach((el) => {
					const s = getComputedStyle(el);
					const r = Math.min(contrast(s.borderTopColor, page), contrast(s.borderTopColor, s.backgroundColor));
					if (!(r >= 3)) { out.push(el.tagName + "#" + el.id + "[" + el.name + "] " + s.borderTopColor + " on " + page + "/" + s.backgroundColor + ": " + r.toFixed(2) + ":1"); }
				});
				return document.querySelectorAll("input, select, textarea").length ? out : ["no fields"];
			})()`))
			if err != nil || len(got) != 0 {
				t.Errorf("in %s mode, %s has fields whose border is under 3:1 (%v): %q", scheme, p, err, got)
			}
		}
	}
}

// The placeholders of text fields read 4.5:1 at least against the field
// (WCAG 1.4.3), in light and dark mode: in dark mode they were 3.59:1.
func TestBrowserPlaceholderContrast(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	base, paths := fieldPages(t)
	for _, scheme := range []string{"light", "dark"} {
		b.do("open the dead letters in "+scheme+" mode", colorScheme(scheme), chromedp.Navigate(base+paths[0]), page("groups"))
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`(() => {`+contrastJS+`
			const out = [];
			document.querySelectorAll("input[placeholder]").forEach((el) => {
				const s = getComputedStyle(el), ph = getComputedStyle(el, "::placeholder");
				const r = contrast(ph.color, s.backgroundColor, Number(ph.opacity));
				if (!(r >= 4.5)) { out.push(el.id + " " + ph.color + " at " + ph.opacity + " on " + s.backgroundColor + ": " + r.toFixed(2) + ":1"); }
			});
			return document.querySelectorAll("input[placeholder]").length ? out : ["no placeholders"];
		})()`))
		if err != nil || len(got) != 0 {
			t.Errorf("in %s mode, placeholders under 4.5:1 (%v): %q", scheme, err, got)
		}
	}
}
