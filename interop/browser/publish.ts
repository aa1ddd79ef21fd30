// The browser publisher page's script: @moq/publish 0.2.17's <moq-publish>
// element (it bundles @moq/net 0.1.9), as a web page embeds it. The page
// itself is written by the Go test (TestBrowserPublisherIntoListen).
import "@moq/publish/element";
