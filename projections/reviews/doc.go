// Package reviews is the product reviews read model (issue 20): its
// projector (stable name "reviews") folds the review events into one row
// per review (status pending, published or rejected, rating, verified
// badge, texts, the author's display name, the merchant's reply, the
// count of helpfulness votes, ReviewMarkedHelpful, one per voter). The
// author's e-mail is never kept here: only what the storefront and the
// moderators read. The texts and the display name are personal data:
// nulled when the customer is erased (CustomerErased) while the rating
// stays counted, and every row goes with its shop (ShopErased). Queries
// serves the public reviews endpoint (page, summary) and moderation.
//
// It imports domain, envelope, projections and readmodel.
package reviews
