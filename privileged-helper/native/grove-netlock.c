/*
 * grove-netlock: the lock that keeps a network namespace silent while CRIU
 * restores a tree into it (host/netns.ts), in one small program instead of
 * nsenter + nft. Starting nft is slow (most of it loading libnftables), and
 * opening the lock is on a fork's child's way to its first frame, in the
 * restore's pre-resume action.
 *
 *   grove-netlock lock NETNS TABLE
 *       creates table inet TABLE with a chain "output" hooked at output,
 *       priority -300, policy drop: nothing leaves a socket in the netns
 *       file NETNS. A TABLE there already (the one the last restore into
 *       NETNS opened) is deleted and made again in the same transaction.
 *
 *   grove-netlock open NETNS TABLE
 *       appends an accept rule to TABLE's output chain: traffic flows
 *       (a later table's drop still applies). Only additions are quick in
 *       nftables: deleting a rule or a table is several times slower.
 *
 *   grove-netlock unlock NETNS TABLE
 *       deletes TABLE; a TABLE that is not there is fine.
 *
 * Each operation is one nftables transaction over netlink (libnftnl builds
 * the messages), made from inside NETNS, and waits for the kernel's answer
 * to every message: it exits 0 once the change is in, or 1 with the reason.
 * Built by build/host/setup.sh.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define CHAIN "output"
#define LOCK_PRIORITY (-300)
/* Long enough for a loaded host, short enough that a restore never hangs on it. */
#define ANSWER_TIMEOUT_S 10
/* A transaction here is at most five small messages; an answer, as many acknowledgements. */
#define BUFFER_SIZE 8192

static const char *table;
static const char *netns;

static void fail(const char *what)
{
	fprintf(stderr, "grove-netlock: %s (netns %s, table %s): %s\n", what, netns, table, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: grove-netlock lock|open|unlock NETNS TABLE\n");
	exit(2);
}

/* What nft itself accepts as a table's name, within nftables' limit. */
static int valid_table(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len >= NFT_TABLE_MAXNAMELEN || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') || name[0] == '_'))
		return 0;
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == len;
}

struct transaction {
	char buf[BUFFER_SIZE];
	struct mnl_nlmsg_batch *batch;
	uint32_t seq;
	unsigned int messages; /* each asks for an answer (NLM_F_ACK) */
};

static char *next_header(struct transaction *t)
{
	return mnl_nlmsg_batch_current(t->batch);
}

static void added(struct transaction *t)
{
	t->messages++;
	mnl_nlmsg_batch_next(t->batch);
}

static void add_table(struct transaction *t, uint16_t type, uint16_t flags)
{
	struct nftnl_table *nt = nftnl_table_alloc();

	if (!nt)
		fail("out of memory");
	nftnl_table_set_str(nt, NFTNL_TABLE_NAME, table);
	nftnl_table_nlmsg_build_payload(nftnl_table_nlmsg_build_hdr(next_header(t), type, NFPROTO_INET, flags | NLM_F_ACK, t->seq++), nt);
	nftnl_table_free(nt);
	added(t);
}

static void add_lock_chain(struct transaction *t)
{
	struct nftnl_chain *c = nftnl_chain_alloc();

	if (!c)
		fail("out of memory");
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table);
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, CHAIN);
	nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, "filter");
	nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
	nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, LOCK_PRIORITY);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_DROP);
	nftnl_chain_nlmsg_build_payload(nftnl_chain_nlmsg_build_hdr(next_header(t), NFT_MSG_NEWCHAIN, NFPROTO_INET, NLM_F_CREATE | NLM_F_ACK, t->seq++), c);
	nftnl_chain_free(c);
	added(t);
}

static void add_accept_rule(struct transaction *t)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct nftnl_expr *accept = nftnl_expr_alloc("immediate");

	if (!r || !accept)
		fail("out of memory");
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, CHAIN);
	nftnl_expr_set_u32(accept, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
	nftnl_expr_set_u32(accept, NFTNL_EXPR_IMM_VERDICT, NF_ACCEPT);
	nftnl_rule_add_expr(r, accept);
	nftnl_rule_nlmsg_build_payload(
		nftnl_rule_nlmsg_build_hdr(next_header(t), NFT_MSG_NEWRULE, NFPROTO_INET, NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK, t->seq++), r);
	nftnl_rule_free(r);
	added(t);
}

static void begin(struct transaction *t)
{
	t->batch = mnl_nlmsg_batch_start(t->buf, sizeof(t->buf));
	t->seq = 1;
	t->messages = 0;
	nftnl_batch_begin(next_header(t), t->seq++);
	mnl_nlmsg_batch_next(t->batch);
}

/*
 * Sends the transaction and reads the kernel's answers: 0 once every
 * message is acknowledged, or the first error (as a positive errno).
 */
static int commit(struct mnl_socket *nl, struct transaction *t)
{
	char answer[BUFFER_SIZE];
	unsigned int acknowledged = 0;

	nftnl_batch_end(next_header(t), t->seq++);
	mnl_nlmsg_batch_next(t->batch);
	if (mnl_socket_sendto(nl, mnl_nlmsg_batch_head(t->batch), mnl_nlmsg_batch_size(t->batch)) < 0)
		fail("cannot send to nftables");
	mnl_nlmsg_batch_stop(t->batch);
	while (acknowledged < t->messages) {
		int len = mnl_socket_recvfrom(nl, answer, sizeof(answer));

		if (len < 0)
			fail(errno == EAGAIN ? "no answer from nftables" : "cannot read nftables' answer");
		for (struct nlmsghdr *h = (struct nlmsghdr *)answer; mnl_nlmsg_ok(h, len); h = mnl_nlmsg_next(h, &len)) {
			const struct nlmsgerr *err = mnl_nlmsg_get_payload(h);

			if (h->nlmsg_type != NLMSG_ERROR)
				continue;
			if (err->error != 0)
				return -err->error;
			acknowledged++;
		}
	}
	return 0;
}

static struct mnl_socket *open_in_netns(void)
{
	struct timeval timeout = { .tv_sec = ANSWER_TIMEOUT_S };
	struct mnl_socket *nl;
	int fd = open(netns, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fail("cannot open the netns");
	if (setns(fd, CLONE_NEWNET) < 0)
		fail("cannot enter the netns");
	close(fd);
	nl = mnl_socket_open(NETLINK_NETFILTER);
	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		fail("cannot open a netlink socket to nftables");
	if (setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) < 0)
		fail("cannot set a timeout on the netlink socket");
	return nl;
}

/* The transaction being built: one per run. */
static struct transaction t;

/* Commits t; an error other than `tolerated` (0: none) ends the run, saying `what`. */
static int commit_or_fail(struct mnl_socket *nl, int tolerated, const char *what)
{
	int err = commit(nl, &t);

	if (err && err != tolerated) {
		errno = err;
		fail(what);
	}
	return err;
}

static void lock(struct mnl_socket *nl)
{
	/* A fresh netns (every fork's child) has no lock: a quick addition. */
	begin(&t);
	add_table(&t, NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_EXCL);
	add_lock_chain(&t);
	if (!commit_or_fail(nl, EEXIST, "cannot lock"))
		return;
	/* A branch restored into its own netns again has the one its last restore opened. */
	begin(&t);
	add_table(&t, NFT_MSG_DELTABLE, 0);
	add_table(&t, NFT_MSG_NEWTABLE, NLM_F_CREATE);
	add_lock_chain(&t);
	commit_or_fail(nl, 0, "cannot lock");
}

static void open_lock(struct mnl_socket *nl)
{
	begin(&t);
	add_accept_rule(&t);
	commit_or_fail(nl, 0, "cannot open the lock");
}

static void unlock(struct mnl_socket *nl)
{
	begin(&t);
	add_table(&t, NFT_MSG_DELTABLE, 0);
	commit_or_fail(nl, ENOENT, "cannot remove the lock");
}

static const struct {
	const char *name;
	void (*run)(struct mnl_socket *nl);
} operations[] = { { "lock", lock }, { "open", open_lock }, { "unlock", unlock } };

int main(int argc, char **argv)
{
	struct mnl_socket *nl;
	size_t op = 0;

	if (argc != 4)
		usage();
	while (op < sizeof(operations) / sizeof(operations[0]) && strcmp(argv[1], operations[op].name))
		op++;
	netns = argv[2];
	table = argv[3];
	if (op == sizeof(operations) / sizeof(operations[0]) || netns[0] != '/' || !valid_table(table))
		usage();
	nl = open_in_netns();
	operations[op].run(nl);
	mnl_socket_close(nl);
	return 0;
}
