// Package intelligence holds the SEO ranking report parser (cgp seo import)
// and the decision-intelligence run: a job that reads the read models of a
// shop and records recommendations as events (Runner), on demand or once a
// day per installed shop (Scheduler, run by cgp serve).
package intelligence
