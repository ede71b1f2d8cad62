import TrialCtl
