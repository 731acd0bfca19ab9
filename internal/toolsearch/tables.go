package toolsearch

// The tables below are small on purpose and generic: the verbs tool names
// are made of, the nouns tool catalogs say in two ways, and the
// abbreviations developers type. They are read-only after package
// initialization. A word may be in several groups ("open" creates a ticket
// and reads a file; "start" creates a sprint and runs a job).

// stopWords are dropped from queries and documents: function words and the
// words of a request that say nothing of the tool ("please", "can", "me").
var stopWords = setOf(
	"a", "an", "the", "of", "in", "on", "to", "for", "and", "or", "is", "are", "am", "be", "been", "was", "were",
	"do", "does", "did", "what", "whats", "which", "who", "whom", "whose", "how", "why", "when", "where",
	"me", "my", "mine", "i", "you", "your", "we", "our", "us", "it", "its", "this", "that", "these", "those",
	"with", "by", "at", "from", "as", "into", "onto", "under", "about", "any", "some", "can", "could", "would",
	"should", "will", "shall", "may", "might", "must", "so", "there", "their", "them", "they", "he", "she", "his",
	"her", "if", "then", "than", "but", "not", "no", "yet", "please", "s", "t", "d", "ll", "m", "re", "ve",
	"just", "also", "too", "very", "all", "have", "has", "had", "let", "lets", "i'm", "want", "need", "like",
)

// verbGroups are the verbs of tool names and the words users say for them.
var verbGroups = [][]string{
	{"create", "add", "new", "make", "open", "generate", "insert", "start", "register"},
	{"delete", "remove", "destroy", "drop", "erase", "purge", "clear", "forget", "uninstall"},
	{"list", "show", "enumerate", "display", "browse"},
	{"get", "fetch", "read", "retrieve", "view", "show", "see", "load", "open", "inspect", "describe"},
	{"update", "edit", "modify", "change", "set", "patch", "alter", "replace", "adjust"},
	{"search", "find", "query", "lookup", "look", "locate", "seek"},
	{"send", "post", "message", "notify", "tell", "publish"},
	{"run", "execute", "invoke", "trigger", "launch", "start", "kick"},
	{"stop", "cancel", "abort", "kill", "halt", "terminate"},
	{"restart", "rerun", "retry"},
	{"close", "shut"},
	{"comment", "note", "reply", "remark"},
	{"move", "rename", "relocate", "transfer"},
	{"copy", "duplicate", "clone"},
	{"write", "save", "store", "record", "persist"},
	{"upload", "attach"},
	{"download", "export"},
	{"check", "verify", "validate", "test"},
}

// nounGroups are the nouns a catalog and its users say in two ways.
var nounGroups = [][]string{
	{"directory", "folder"},
	{"issue", "ticket", "bug"},
	{"image", "picture", "photo"},
	{"user", "person", "people", "member", "account"},
	{"error", "exception", "crash", "failure"},
	{"label", "tag"},
	{"link", "url"},
	{"password", "secret", "credential"},
}

// abbreviations expand a short form into its words, in queries and in
// documents alike, so that "PR" finds "pull request" and "pull request"
// finds a description that says "PR".
var abbreviations = map[string][]string{
	"pr":     {"pull", "request"},
	"prs":    {"pull", "requests"},
	"mr":     {"merge", "request"},
	"repo":   {"repository"},
	"repos":  {"repositories"},
	"db":     {"database"},
	"k8s":    {"kubernetes"},
	"msg":    {"message"},
	"dir":    {"directory"},
	"env":    {"environment"},
	"config": {"configuration"},
	"cfg":    {"configuration"},
	"auth":   {"authentication"},
	"img":    {"image"},
	"doc":    {"document"},
	"docs":   {"documentation"},
	"info":   {"information"},
	"org":    {"organization"},
	"js":     {"javascript"},
	"pkg":    {"package"},
	"dep":    {"dependency"},
	"deps":   {"dependencies"},
	"app":    {"application"},
	"admin":  {"administrator"},
	"tmp":    {"temporary"},
	"temp":   {"temporary"},
	"desc":   {"description"},
	"stats":  {"statistics"},
	"dm":     {"direct", "message"},
	"vm":     {"virtual", "machine"},
}

// alnumWords are runs of letters and digits kept whole by the tokenizer.
var alnumWords = setOf("k8s", "s3", "ec2", "oauth2", "base64", "utf8", "x509", "mp3", "mp4", "ipv4", "ipv6", "http2", "h2", "i18n", "l10n")

func setOf(ws ...string) map[string]struct{} {
	m := make(map[string]struct{}, len(ws))
	for _, w := range ws {
		m[w] = struct{}{}
	}
	return m
}

// tableWords are the words of the tables: a capitalized one in a request
// ("PR", "DB", "Issue") is what the request asks for, not a name.
var tableWords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, groups := range [][][]string{verbGroups, nounGroups, domainGroups} {
		for _, g := range groups {
			for _, w := range g {
				m[w] = struct{}{}
			}
		}
	}
	for a, ws := range abbreviations {
		m[a] = struct{}{}
		for _, w := range ws {
			m[w] = struct{}{}
		}
	}
	for w := range alnumWords {
		m[w] = struct{}{}
	}
	return m
}()
