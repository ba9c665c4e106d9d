"""The router's fallback rule on its own: general features of a question, in English and Chinese.

These questions are written for the test (none is in the bundled routing set)."""

from __future__ import annotations

import pytest

from reasonloop.reasoning.steps.route_rule import rule_route


@pytest.mark.parametrize(
    ("question", "route"),
    [
        ("Hi there!", "none"),
        ("Thanks, that helps a lot.", "none"),
        ("Translate 'invoice overdue' into German.", "none"),
        ("What is 48 divided by 6?", "none"),
        ("Your last answer was wrong about the deadline.", "none"),
        ("谢谢！", "none"),
        ("把“发票已逾期”翻译成德语。", "none"),
        ("What is the deadline for submitting expense claims?", "single"),
        ("Who approves purchases above 5,000 euros?", "single"),
        ("报销申请的截止日期是哪天？", "single"),
        ("Which office has more staff, Oslo or Madrid?", "multi_hop"),
        ("Were the warehouse lease and the parking lease signed by the same person?", "multi_hop"),
        ("Where does the engineer who maintains the payroll system sit?", "multi_hop"),
        ("奥斯陆办公室和马德里办公室哪个员工更多？", "multi_hop"),
        ("维护工资系统的那位工程师在哪里办公？", "multi_hop"),
        ("Write a report on our supplier risks with a source for each risk.", "research"),
        ("Analyse the causes of every delayed shipment this year.", "research"),
        ("写一份关于供应商风险的报告，每项风险注明出处。", "research"),
        ("分析今年所有延误发货的原因。", "research"),
    ],
)
def test_the_rule_reads_the_form_of_a_question(question: str, route: str) -> None:
    decided, reason = rule_route(question)
    assert decided == route, reason
    assert reason


def test_a_noun_that_is_also_a_research_word_is_not_a_research_request() -> None:
    assert rule_route("What was the revenue in the quarterly report?")[0] == "single"
    assert rule_route("季度报告里的收入是多少？")[0] == "single"
