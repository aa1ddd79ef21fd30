package archive

// FeedStep is the part of each track an unpaced read writes at once.
const FeedStep = step
